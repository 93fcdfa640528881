package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// Every route that answers a websocket handshake with 101 must be in the
// limits' list of websocket routes; otherwise its websockets would hold
// an in-flight slot and be cut at the request timeout.
func TestEveryWebsocketRouteIsLongRunning(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	upgraded := 0
	for _, rt := range lab.Echo().Routes() {
		if rt.Method != http.MethodGet {
			continue
		}
		path := strings.ReplaceAll(rt.Path, "*", "x")
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "x", 1)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, lab.URL()+path, nil)
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Origin", lab.URL())
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", rt.Path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		upgraded++
		if !server.IsWebsocketRoute(rt.Path) {
			t.Errorf("route %s upgrades to a websocket but the limits treat it as a short request", rt.Path)
		}
	}
	if upgraded == 0 {
		t.Fatal("no route upgraded: the handshake this test sends is wrong")
	}
	t.Logf("%d routes upgrade", upgraded)
}
