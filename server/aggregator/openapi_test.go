package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/metricsapi"
	"github.com/kubelab/kubelab/server/openapi"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/storagetest"
)

const (
	namespaceMetricsDef = "com.github.kubelab.kubelab.server.metricsapi.NamespaceMetrics"
	widgetDef           = "com.example.widgets.v1.Widget"
)

// fakeBackend is an aggregated server whose documents a test changes: it
// passes the discovery check while up, and serves /openapi/v2 (and
// /openapi/v3 when v3 is set) as given.
type fakeBackend struct {
	group, version string

	mu       sync.Mutex
	up       bool
	etag     string // sent with v2, which is then 304 to If-None-Match
	v2       string
	v3       map[string]string // documents by group version
	requests []string          // paths asked, with If-None-Match
}

func (f *fakeBackend) set(change func(f *fakeBackend)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.Path+" "+r.Header.Get("If-None-Match"))
	if user := r.Header.Get("X-Remote-User"); r.Header.Get("Authorization") != "Bearer secret" ||
		(strings.HasPrefix(r.URL.Path, "/openapi/") && user != "system:aggregator") {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	switch p := r.URL.Path; {
	case p == "/apis/"+f.group+"/"+f.version && f.up:
		json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: f.group + "/" + f.version})
	case p == "/openapi/v2" && f.v2 != "":
		if f.etag != "" {
			w.Header().Set("ETag", f.etag)
			if r.Header.Get("If-None-Match") == f.etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		io.WriteString(w, f.v2)
	case p == "/openapi/v3" && f.v3 != nil:
		disc := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
		for gv := range f.v3 {
			disc.Paths[gv] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: "/openapi/v3/" + gv + "?hash=" + fmt.Sprint(len(f.v3[gv]))}
		}
		json.NewEncoder(w).Encode(disc)
	case strings.HasPrefix(p, "/openapi/v3/") && f.v3[strings.TrimPrefix(p, "/openapi/v3/")] != "":
		io.WriteString(w, f.v3[strings.TrimPrefix(p, "/openapi/v3/")])
	default:
		http.NotFound(w, r)
	}
}

// widgetsV2 is a backend's /openapi/v2: the widgets path of its group
// version, and one outside it that the aggregator must leave out.
func widgetsV2(description string) string {
	return `{"swagger":"2.0","info":{"title":"widgets","version":"v1"},
"paths":{
 "/apis/widgets.example.com/v1/widgets":{"get":{"operationId":"listWidgets","responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/com.example.widgets.v1.Widget"}}}}},
 "/apis/other.example.com/v1/gadgets":{"get":{"operationId":"listGadgets","responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/com.example.other.v1.Gadget"}}}}}},
"definitions":{
 "com.example.widgets.v1.Widget":{"description":"` + description + `","type":"object",
  "properties":{"size":{"type":"integer"}},
  "x-kubernetes-group-version-kind":[{"group":"widgets.example.com","version":"v1","kind":"Widget"}]},
 "com.example.other.v1.Gadget":{"type":"object"}}}`
}

// harness is an aggregator over a real etcd with the real OpenAPI
// service, whose documents are served by an Echo router.
type harness struct {
	agg  *Aggregator
	docs *httptest.Server
	log  *logBuffer
}

// logBuffer is the aggregator's log, read while it writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// backends are http.Handlers to serve, or a running *metricsapi.Server.
func startHarness(t *testing.T, backends map[string]any, services ...*apiregistrationv1.APIService) *harness {
	t.Helper()
	etcd := storagetest.StartEtcd(t)
	api, err := kubeapi.New(registry.Config{Client: etcd.Client(), Resources: []*registry.Resource{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	docs, err := openapi.New(nil, openapi.Info{})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	docs.Register(e)
	h := &harness{docs: httptest.NewServer(e), log: &logBuffer{}}
	t.Cleanup(h.docs.Close)
	urls := map[string]string{}
	for name, b := range backends {
		handler, ok := b.(http.Handler)
		if !ok {
			continue
		}
		srv := httptest.NewServer(handler)
		t.Cleanup(srv.Close)
		urls[name] = srv.URL
	}
	resolve := func(_, name string, _ int32) (Backend, bool) {
		if m, ok := backends[name].(*metricsapi.Server); ok {
			return Backend{URL: m.URL(), Token: m.Token()}, true
		}
		u, ok := urls[name]
		return Backend{URL: u, Token: "secret"}, ok
	}
	h.agg, err = New(Config{API: api, Resolve: resolve, Docs: docs, CheckInterval: 50 * time.Millisecond,
		OpenAPIInterval: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(h.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, svc := range services {
		if err := h.agg.Register(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	if h.agg.OpenAPISynced() {
		t.Fatal("synced before starting")
	}
	h.agg.Start()
	t.Cleanup(h.agg.Stop)
	return h
}

func apiService(group, version, service string) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: 100, VersionPriority: 10,
			Service: &apiregistrationv1.ServiceReference{Namespace: "default", Name: service}},
	}
}

func (h *harness) get(t *testing.T, path, accept string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.docs.URL+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

func (h *harness) v2(t *testing.T) *spec.Swagger {
	t.Helper()
	doc := &spec.Swagger{}
	if err := json.Unmarshal(h.get(t, "/openapi/v2", "application/json"), doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func (h *harness) v3Paths(t *testing.T) map[string]handler3.OpenAPIV3DiscoveryGroupVersion {
	t.Helper()
	var disc handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(h.get(t, "/openapi/v3", ""), &disc); err != nil {
		t.Fatal(err)
	}
	return disc.Paths
}

func (h *harness) v3(t *testing.T, gv string) *spec3.OpenAPI {
	t.Helper()
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal(h.get(t, "/openapi/v3/"+gv, "application/json"), doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func waitFor(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOpenAPIAggregation: once the controller reports its first pass done,
// kubelab's documents have every available backend's group version; a
// broken backend is skipped without harm to them; documents follow the
// backends' changes, availability and APIServices.
func TestOpenAPIAggregation(t *testing.T) {
	t.Parallel()
	metrics, err := metricsapi.Start(metricsapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { metrics.Stop(context.Background()) })
	widgets := &fakeBackend{group: "widgets.example.com", version: "v1", up: true, v2: widgetsV2("A widget.")}
	broken := &fakeBackend{group: "broken.example.com", version: "v1", up: true,
		v2: `{"swagger":"2.0","paths":{"/apis/broken.example.com/v1/things":{"get":{"responses":{"200":{"description":"OK","schema":{"type":5}}}}}}}`,
		v3: map[string]string{"apis/broken.example.com/v1": `{"openapi":"3.0.0","components":`}}
	invalid := &fakeBackend{group: "invalid.example.com", version: "v1", up: true,
		// JSON the spec types read, but not a document: protobuf conversion
		// (what kubectl asks /openapi/v2 for) would fail on it.
		v2: `{"swagger":"2.0","info":{"title":"invalid","version":"v1"},
"paths":{"/apis/invalid.example.com/v1/things":{"get":{"responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/thing"}}}}}},
"definitions":{"thing":{"type":"object","nullable":true}}}`}
	h := startHarness(t, map[string]any{"metrics": metrics, "widgets": widgets, "broken": broken, "invalid": invalid},
		apiService("metrics.k8s.io", "v1beta1", "metrics"), apiService("widgets.example.com", "v1", "widgets"),
		apiService("broken.example.com", "v1", "broken"), apiService("invalid.example.com", "v1", "invalid"))
	waitFor(t, "first pass", func() string {
		if !h.agg.OpenAPISynced() {
			return "not synced"
		}
		return ""
	})

	t.Run("V2", func(t *testing.T) {
		doc := h.v2(t)
		for _, def := range []string{namespaceMetricsDef, widgetDef, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"} {
			if _, ok := doc.Definitions[def]; !ok {
				t.Errorf("definition %s missing", def)
			}
		}
		gvk, _ := doc.Definitions[namespaceMetricsDef].Extensions["x-kubernetes-group-version-kind"].([]interface{})
		if len(gvk) != 1 || gvk[0].(map[string]interface{})["kind"] != "NamespaceMetrics" {
			t.Errorf("NamespaceMetrics GVK: %v", gvk)
		}
		for _, p := range []string{"/apis/metrics.k8s.io/v1beta1/namespacemetrics/{name}", "/apis/widgets.example.com/v1/widgets"} {
			if _, ok := doc.Paths.Paths[p]; !ok {
				t.Errorf("path %s missing", p)
			}
		}
		// Only the APIService's group version is taken from a backend, and
		// nothing from the broken ones.
		for _, p := range []string{"/apis/other.example.com/v1/gadgets", "/apis/broken.example.com/v1/things", "/apis/invalid.example.com/v1/things"} {
			if _, ok := doc.Paths.Paths[p]; ok {
				t.Errorf("path %s merged", p)
			}
		}
		for _, name := range []string{"v1.broken.example.com", "v1.invalid.example.com"} {
			if !strings.Contains(h.log.String(), "apiservice="+name) {
				t.Errorf("nothing logged about %s:\n%s", name, h.log)
			}
		}
		if _, ok := doc.Definitions["com.example.other.v1.Gadget"]; ok {
			t.Error("a definition of another group version merged")
		}
		// kubectl reads the protobuf form: it still converts.
		if proto := h.get(t, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"); len(proto) == 0 || bytes.HasPrefix(proto, []byte("{")) {
			t.Errorf("protobuf /openapi/v2: %.100q", proto)
		}
	})
	t.Run("V3", func(t *testing.T) {
		paths := h.v3Paths(t)
		for _, gv := range []string{"apis/metrics.k8s.io/v1beta1", "apis/widgets.example.com/v1"} {
			if _, ok := paths[gv]; !ok {
				t.Fatalf("/openapi/v3 lacks %s: %v", gv, paths)
			}
		}
		if _, ok := paths["apis/broken.example.com/v1"]; ok {
			t.Error("a broken v3 document published")
		}
		doc := h.v3(t, "apis/metrics.k8s.io/v1beta1")
		if s := doc.Components.Schemas[namespaceMetricsDef]; s == nil || s.Properties["objects"].Description == "" {
			t.Errorf("metrics v3 schema: %+v", s)
		}
		// The widgets backend has no /openapi/v3: its v2 is converted.
		if s := h.v3(t, "apis/widgets.example.com/v1").Components.Schemas[widgetDef]; s == nil || s.Description != "A widget." {
			t.Errorf("converted widgets v3 schema: %+v", s)
		}
	})
	t.Run("Refetch", func(t *testing.T) {
		widgets.set(func(f *fakeBackend) { f.v2 = widgetsV2("A bigger widget.") })
		waitFor(t, "changed widget description", func() string {
			if d := h.v2(t).Definitions[widgetDef].Description; d != "A bigger widget." {
				return d
			}
			if s := h.v3(t, "apis/widgets.example.com/v1").Components.Schemas[widgetDef]; s.Description != "A bigger widget." {
				return "v3: " + s.Description
			}
			return ""
		})
		// Without an ETag from the backend the document is fetched whole
		// again; with one, the aggregator asks whether it changed.
		askedFor := func(want string) func() string {
			return func() string {
				var got []string
				widgets.set(func(f *fakeBackend) { got = append(got, f.requests...) })
				for _, r := range got {
					if r == want {
						return ""
					}
				}
				return fmt.Sprint(got)
			}
		}
		widgets.set(func(f *fakeBackend) { f.requests = nil })
		waitFor(t, "asked again", askedFor("/openapi/v2 "))
		widgets.set(func(f *fakeBackend) { f.etag, f.v2 = `"w3"`, widgetsV2("The third widget.") })
		waitFor(t, "third widget", func() string {
			if d := h.v2(t).Definitions[widgetDef].Description; d != "The third widget." {
				return d
			}
			return ""
		})
		waitFor(t, "asked with the ETag", askedFor(`/openapi/v2 "w3"`))
	})
	t.Run("Unavailable", func(t *testing.T) {
		widgets.set(func(f *fakeBackend) { f.up = false })
		waitFor(t, "widgets removed", func() string {
			if _, ok := h.v2(t).Definitions[widgetDef]; ok {
				return "still in v2"
			}
			if _, ok := h.v3Paths(t)["apis/widgets.example.com/v1"]; ok {
				return "still in v3"
			}
			return ""
		})
		widgets.set(func(f *fakeBackend) { f.up = true })
		waitFor(t, "widgets back", func() string {
			if _, ok := h.v2(t).Definitions[widgetDef]; !ok {
				return "not in v2"
			}
			return ""
		})
	})
	t.Run("Removed", func(t *testing.T) {
		if _, _, err := h.agg.store.Delete(context.Background(), storage.Key{Name: "v1beta1.metrics.k8s.io"}, registry.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "metrics removed", func() string {
			doc := h.v2(t)
			if _, ok := doc.Definitions[namespaceMetricsDef]; ok {
				return "definition still in v2"
			}
			if _, ok := doc.Paths.Paths["/apis/metrics.k8s.io/v1beta1/namespacemetrics"]; ok {
				return "path still in v2"
			}
			if _, ok := h.v3Paths(t)["apis/metrics.k8s.io/v1beta1"]; ok {
				return "still in v3"
			}
			return ""
		})
		if _, ok := h.v2(t).Definitions[widgetDef]; !ok {
			t.Error("the widgets went too")
		}
	})
}

// TestOpenAPISyncedWithoutBackends: with nothing to aggregate the first
// pass still ends.
func TestOpenAPISyncedWithoutBackends(t *testing.T) {
	t.Parallel()
	h := startHarness(t, nil)
	waitFor(t, "first pass", func() string {
		if !h.agg.OpenAPISynced() {
			return "not synced"
		}
		return ""
	})
}
