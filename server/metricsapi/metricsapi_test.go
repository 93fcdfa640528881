package metricsapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/trace"
)

func TestServer(t *testing.T) {
	bus := trace.NewBus(trace.Config{})
	counts := map[string]map[string]int{"team-a": {"pods": 2, "configmaps": 1}}
	s, err := Start(Config{Traces: bus, Count: func(context.Context) (map[string]map[string]int, error) { return counts, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })

	get := func(path, token, user string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if user != "" {
			req.Header.Set("X-Remote-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body json.RawMessage
		json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	t.Run("ErrUntrusted", func(t *testing.T) {
		for _, c := range []struct{ token, user string }{{"", "alice"}, {"wrong", "alice"}, {s.Token(), ""}} {
			if resp, _ := get("/apis/metrics.k8s.io/v1beta1", c.token, c.user); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("token %q user %q: %d", c.token, c.user, resp.StatusCode)
			}
		}
	})
	t.Run("OK", func(t *testing.T) {
		for range 3 {
			bus.Publish(pipeline.Trace{Namespace: "team-b", Verb: "list", Time: time.Now()})
		}
		bus.Publish(pipeline.Trace{Namespace: "team-a", Verb: "create", Time: time.Now().Add(-2 * Window)}) // too old
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, body := get("/apis/metrics.k8s.io/v1beta1/namespacemetrics/team-b", s.Token(), "alice")
			var m NamespaceMetrics
			json.Unmarshal(body, &m)
			if resp.StatusCode == http.StatusOK && m.Requests.ByVerb["list"] == 3 {
				if resp.Header.Get(ServedForHeader) != "alice" {
					t.Fatalf("served for %q", resp.Header.Get(ServedForHeader))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("team-b: %d %s", resp.StatusCode, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, body := get("/apis/metrics.k8s.io/v1beta1/namespacemetrics/team-a", s.Token(), "alice")
		var a NamespaceMetrics
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		if a.Objects["pods"] != 2 || a.Objects["configmaps"] != 1 || a.Requests.Total != 0 {
			t.Fatalf("team-a: %s", body)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if resp, _ := get("/apis/metrics.k8s.io/v1beta1/namespacemetrics/nobody", s.Token(), "alice"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}

// A connection on which no request ever comes (one a client dialed for a
// request it then cancelled) does not hold Stop up: net/http's Shutdown
// alone waits 5 s for one.
func TestStopDoesNotWaitForAnIdleNewConnection(t *testing.T) {
	s, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(100 * time.Millisecond) // the server has accepted it
	start := time.Now()
	s.Stop(context.Background())
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Stop took %s with a connection that sent nothing", d)
	}
}
