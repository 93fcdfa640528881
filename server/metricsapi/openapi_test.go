package metricsapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubelab/kubelab/internal/gentest"
)

const namespaceMetricsDef = "com.github.kubelab.kubelab.server.metricsapi.NamespaceMetrics"

// TestOpenAPI: the server publishes its group version in /openapi/v2 and
// /openapi/v3 with its kinds tagged by GVK, as an aggregator expects, and
// only to the aggregator.
func TestOpenAPI(t *testing.T) {
	s, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	get := func(t *testing.T, path string, trusted bool, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		if trusted {
			req.Header.Set("Authorization", "Bearer "+s.Token())
			req.Header.Set("X-Remote-User", "system:aggregator")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	checkKind := func(t *testing.T, def spec.Schema) {
		t.Helper()
		gvks, _ := def.Extensions["x-kubernetes-group-version-kind"].([]interface{})
		if len(gvks) != 1 {
			t.Fatalf("GVK extension: %v", def.Extensions)
		}
		if m := gvks[0].(map[string]interface{}); m["group"] != "metrics.k8s.io" || m["version"] != "v1beta1" || m["kind"] != "NamespaceMetrics" {
			t.Fatalf("GVK: %v", m)
		}
		if _, ok := def.Properties["requests"]; !ok || def.Description == "" {
			t.Fatalf("definition: %+v", def)
		}
	}

	t.Run("V2", func(t *testing.T) {
		resp, body := get(t, "/openapi/v2", true)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var doc spec.Swagger
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		checkKind(t, doc.Definitions[namespaceMetricsDef])
		for _, p := range []string{"/apis/metrics.k8s.io/v1beta1/namespacemetrics", "/apis/metrics.k8s.io/v1beta1/namespacemetrics/{name}"} {
			if item, ok := doc.Paths.Paths[p]; !ok || item.Get == nil {
				t.Fatalf("path %s missing: %v", p, doc.Paths.Paths)
			}
		}
		if _, ok := doc.Definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
			t.Fatal("ObjectMeta missing: the document must stand on its own")
		}
		etag := resp.Header.Get("Etag")
		if resp, _ := get(t, "/openapi/v2", true, "If-None-Match", etag); etag == "" || resp.StatusCode != http.StatusNotModified {
			t.Fatalf("etag %q: %d", etag, resp.StatusCode)
		}
	})
	t.Run("V3", func(t *testing.T) {
		resp, body := get(t, "/openapi/v3", true)
		var disc handler3.OpenAPIV3Discovery
		if err := json.Unmarshal(body, &disc); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%d %v %s", resp.StatusCode, err, body)
		}
		gv, ok := disc.Paths["apis/metrics.k8s.io/v1beta1"]
		if !ok || len(disc.Paths) != 1 {
			t.Fatalf("discovery: %s", body)
		}
		resp, body = get(t, gv.ServerRelativeURL, true)
		var doc spec3.OpenAPI
		if err := json.Unmarshal(body, &doc); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%d %v %s", resp.StatusCode, err, body)
		}
		checkKind(t, *doc.Components.Schemas[namespaceMetricsDef])
		if resp, _ := get(t, "/openapi/v3/apis/metrics.k8s.io/v1", true); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown group version: %d", resp.StatusCode)
		}
	})
	t.Run("ErrUntrusted", func(t *testing.T) {
		if resp, _ := get(t, "/openapi/v2", false); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}

// TestGeneratedIsUpToDate: a change to the types must come with
// regenerated definitions.
func TestGeneratedIsUpToDate(t *testing.T) {
	gentest.UpToDate(t, "generate.sh", "zz_generated.openapi.go", "run `go generate ./server/metricsapi/`")
}
