package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/server/terminal"
)

// requestKind is how the limits treat a request.
type requestKind int

const (
	// shortRequest holds an in-flight slot and gets the request timeout.
	shortRequest requestKind = iota
	// watchRequest is a watch of the API: it holds a watch place of its user.
	watchRequest
	// streamRequest is a websocket (counted by the live views that serve
	// it) or a profile (admins only, and as long as it was asked to run).
	streamRequest
)

// websocketRoutes are the routes whose handlers upgrade to a websocket.
// TestEveryWebsocketRouteIsLongRunning finds every route that upgrades
// and fails if one is missing here.
var websocketRoutes = map[string]bool{
	"/ui/ws/trace": true, "/ui/ws/watch": true, "/ui/ws/run": true, "/ui/ws/pollwatch": true,
	terminal.WebsocketPath:  true,
	labhttp.APIPath + "/ws": true,
}

// profileRoute is where Go's profiler is served (--profiling).
const profileRoute = "/debug/pprof/*"

// apiRoutes are the routes of the Kubernetes API (kubeapi.Install).
var apiRoutes = map[string]bool{"/api/*": true, "/apis/*": true}

// requestInfos parses API paths as kube-apiserver does.
var requestInfos = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// classify decides from the route Echo matched and the verb parsed from
// the URL, never from headers alone: an Upgrade header or ?watch=1 on a
// list's route, added to an ordinary request, makes no difference.
func classify(c echo.Context) requestKind {
	r := c.Request()
	switch route := c.Path(); {
	case websocketRoutes[route] && isWebsocketHandshake(r):
		return streamRequest
	case route == profileRoute:
		return streamRequest
	case apiRoutes[route] && isWatch(r):
		return watchRequest
	}
	return shortRequest
}

// isWatch: kube-apiserver parses the request as a watch (a GET with any
// watch value but false and 0, watch=yes and a bare watch too, or under
// /watch/), as kubelab's API does, with the same library.
func isWatch(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	// A cheap test first: most requests fail it.
	if !r.URL.Query().Has("watch") && !strings.Contains(r.URL.Path, "/watch/") {
		return false
	}
	info, err := requestInfos.NewRequestInfo(r)
	return err == nil && info.IsResourceRequest && info.Verb == "watch"
}

// isWebsocketHandshake is RFC 6455's opening handshake, which the handler
// of a websocket route answers with 101 or refuses at once.
func isWebsocketHandshake(r *http.Request) bool {
	return r.Method == http.MethodGet &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		headerHasToken(r.Header, "Connection", "upgrade") &&
		r.Header.Get("Sec-WebSocket-Key") != ""
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
