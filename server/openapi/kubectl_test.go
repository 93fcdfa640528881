package openapi

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/internal/clitest"
)

// TestKubectlExplain runs the real kubectl against the documents: explain
// reads OpenAPI v3 by default and v2 protobuf with plaintext-openapiv2, and
// prints the generated field descriptions. The legacy discovery kubectl
// needs to map "pods" to a kind is served by the test itself, from the same
// resources (it is not this package's to serve).
func TestKubectlExplain(t *testing.T) {
	kubectl := clitest.Kubectl(t)
	resources := labResources()
	s, err := New(resources, Info{Title: "Kubernetes", Version: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	s.Register(e)
	serveLegacyDiscovery(e, resources)
	srv := newServer(t, e)

	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		args = append([]string{"--server", srv, "--cache-dir", filepath.Join(home, "cache")}, args...)
		out, errOut, err := clitest.RunWith(t, clitest.Options{Env: []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none")}}, kubectl, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"explain", "pods.spec.containers"}, []string{"KIND:       Pod", "List of containers belonging to the pod."}},
		{[]string{"explain", "--output=plaintext-openapiv2", "pods.spec.containers"}, []string{"KIND:     Pod", "List of containers belonging to the pod."}},
		{[]string{"explain", "roles.rules"}, []string{"GROUP:      rbac.authorization.k8s.io", "rules holds all the PolicyRules for this Role"}},
	} {
		out := run(tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl %s: output lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
	}
}

// serveLegacyDiscovery answers /api, /apis and each group version's
// resource list from resources, with plain JSON (kubectl then falls back
// from aggregated discovery).
func serveLegacyDiscovery(e *echo.Echo, resources []Resource) {
	byGV := map[schema.GroupVersion][]metav1.APIResource{}
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, r := range resources {
		gv := r.GroupVersion
		if _, ok := byGV[gv]; !ok && gv.Group != "" {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			groups.Groups = append(groups.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
		byGV[gv] = append(byGV[gv], metav1.APIResource{Name: r.Resource, Kind: r.Kind, Namespaced: r.Namespaced, Verbs: r.Verbs})
	}
	e.GET("/api", func(c echo.Context) error {
		return c.JSON(http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: c.Request().Host}}})
	})
	e.GET("/apis", func(c echo.Context) error { return c.JSON(http.StatusOK, groups) })
	for gv, list := range byGV {
		body := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: list}
		e.GET(apiPrefix(gv), func(c echo.Context) error { return c.JSON(http.StatusOK, body) })
	}
}
