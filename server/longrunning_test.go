package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// The limits tell long-running requests from the route Echo matched and
// the verb parsed as kube-apiserver parses it: headers and query
// parameters a client can add to any request change nothing elsewhere.
func TestClassifyByRouteAndParsedVerb(t *testing.T) {
	t.Parallel()
	handshake := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Version": {"13"}}
	tests := []struct {
		name, method, target string
		header               http.Header
		want                 requestKind
	}{
		{"OK watch of a list", "GET", "/api/v1/namespaces/alice/configmaps?watch=1", nil, watchRequest},
		{"OK watch=true", "GET", "/apis/apps/v1/deployments?watch=true", nil, watchRequest},
		{"OK watch path", "GET", "/api/v1/watch/namespaces/alice/configmaps", nil, watchRequest},
		{"OK websocket route, upgraded", "GET", "/ui/ws/trace", handshake, streamRequest},
		{"OK labs websocket, upgraded", "GET", "/kubelab/v1/labs/ws", handshake, streamRequest},
		{"OK profile", "GET", "/debug/pprof/profile?seconds=5", nil, streamRequest},
		{"ErrUpgradeHeaderOnAList", "GET", "/api/v1/namespaces/alice/configmaps", handshake, shortRequest},
		{"ErrUpgradeHeaderOnACreate", "POST", "/api/v1/namespaces/alice/configmaps", handshake, shortRequest},
		{"ErrUpgradeHeaderOnAPage", "GET", "/lesson/watch", handshake, shortRequest},
		{"ErrWatchQueryOnACreate", "POST", "/api/v1/namespaces/alice/configmaps?watch=1", nil, shortRequest},
		{"ErrWatchQueryOnADelete", "DELETE", "/api/v1/namespaces/alice/configmaps?watch=true", nil, shortRequest},
		{"ErrWatchQueryOnAGetOfOne", "GET", "/api/v1/namespaces/alice/configmaps/x?watch=1", nil, shortRequest},
		{"ErrWatchQueryOffTheAPI", "GET", "/kubelab/v1/quizzes?watch=1", nil, shortRequest},
		{"ErrWatchPathOffTheAPI", "GET", "/kubelab/v1/watch/x", nil, shortRequest},
		// kube reads any watch value but false and 0 as a watch, and so does
		// kubelab's API.
		{"OK watch=yes", "GET", "/api/v1/namespaces/alice/configmaps?watch=yes", nil, watchRequest},
		{"OK bare watch", "GET", "/api/v1/namespaces/alice/configmaps?watch", nil, watchRequest},
		{"ErrWatchFalseIsAList", "GET", "/api/v1/namespaces/alice/configmaps?watch=False", nil, shortRequest},
		{"ErrWatchZeroIsAList", "GET", "/api/v1/namespaces/alice/configmaps?watch=0", nil, shortRequest},
		{"ErrWatchPathCreate", "POST", "/api/v1/watch/namespaces/alice/configmaps", nil, shortRequest},
		{"ErrWebsocketRouteWithoutHandshake", "GET", "/ui/ws/watch", nil, shortRequest},
	}
	e := echo.New()
	var got requestKind
	h := func(c echo.Context) error { got = classify(c); return nil }
	for _, p := range []string{"/api/*", "/apis/*", "/debug/pprof/*", "/kubelab/v1/*"} {
		e.Any(p, h)
	}
	for _, p := range []string{"/ui/ws/trace", "/ui/ws/watch", "/kubelab/v1/labs/ws", "/lesson/:slug"} {
		e.GET(p, h)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = -1
			r := httptest.NewRequest(tt.method, tt.target, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			e.ServeHTTP(httptest.NewRecorder(), r)
			if got != tt.want {
				t.Fatalf("%s %s: kind %d, want %d", tt.method, tt.target, got, tt.want)
			}
		})
	}
}
