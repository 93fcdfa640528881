package aggregator_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// TestMetricsOpenAPI: kubelab's /openapi/v2 and /openapi/v3 carry the
// metrics server's group version, fetched through its APIService, so the
// real kubectl explains namespacemetrics from either document.
func TestMetricsOpenAPI(t *testing.T) {
	t.Parallel()
	lab := startAggregated(t)
	const def = "com.github.kubelab.kubelab.server.metricsapi.NamespaceMetrics"
	eventually(t, "metrics in /openapi/v2", func() string {
		raw, stderr, err := kubectl(t, lab, "", "get", "--raw", "/openapi/v2")
		if err != nil {
			return stderr
		}
		doc := &spec.Swagger{}
		if err := json.Unmarshal([]byte(raw), doc); err != nil {
			return err.Error()
		}
		if _, ok := doc.Definitions[def]; !ok {
			return "no NamespaceMetrics definition"
		}
		if _, ok := doc.Paths.Paths["/apis/metrics.k8s.io/v1beta1/namespacemetrics/{name}"]; !ok {
			return "no namespacemetrics path"
		}
		// The metrics server's apimachinery definitions are kubelab's own:
		// they merge, rather than come in renamed copies.
		for name := range doc.Definitions {
			if strings.HasSuffix(name, "_v2") {
				t.Errorf("definition %s: a renamed copy", name)
			}
		}
		return ""
	})
	var disc handler3.OpenAPIV3Discovery
	if err := json.Unmarshal([]byte(mustKubectl(t, lab, "get", "--raw", "/openapi/v3")), &disc); err != nil {
		t.Fatal(err)
	}
	gv, ok := disc.Paths["apis/metrics.k8s.io/v1beta1"]
	if !ok {
		t.Fatalf("/openapi/v3 lacks metrics.k8s.io/v1beta1: %v", disc.Paths)
	}
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal([]byte(mustKubectl(t, lab, "get", "--raw", gv.ServerRelativeURL)), doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Components.Schemas[def]; s == nil || s.Properties["requests"].Description == "" {
		t.Fatalf("v3 NamespaceMetrics schema: %+v", s)
	}

	for _, tc := range []struct{ args, want []string }{
		{[]string{"explain", "namespacemetrics"}, []string{"GROUP:      metrics.k8s.io", "KIND:       NamespaceMetrics", "VERSION:    v1beta1", "Objects counts the namespace's objects by resource."}},
		{[]string{"explain", "namespacemetrics.requests"}, []string{"FIELD: requests <Requests>", "Requests counts the API requests made in the namespace in the window.", "perMinute"}},
		{[]string{"explain", "--output=plaintext-openapiv2", "namespacemetrics.requests"}, []string{"KIND:     NamespaceMetrics", "Requests counts the API requests made in the namespace in the window."}},
		// The APIService kind itself is in kubelab's own documents.
		{[]string{"explain", "apiservice.spec.groupPriorityMinimum"}, []string{"GROUP:      apiregistration.k8s.io", "KIND:       APIService", "GroupPriorityMinimum is the priority this group should have at least."}},
	} {
		out := mustKubectl(t, lab, tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl %s: output lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
	}
}
