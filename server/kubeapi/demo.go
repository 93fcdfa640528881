package kubeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/storage"
)

// DemoNamespace is the lesson's namespace, with the lesson's pods in it.
const DemoNamespace = "internals-demo"

// demoRequests build the lesson's world through the API itself, so the
// objects (and their managedFields) are what those requests make on a real
// cluster: ssa-demo is applied by manager-a, as the lesson's etcdctl shows.
var demoRequests = []struct{ method, path, contentType, body string }{
	{"POST", "/api/v1/namespaces", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"internals-demo"}}`},
	{"PATCH", "/api/v1/namespaces/internals-demo/pods/ssa-demo?fieldManager=manager-a", "application/apply-patch+yaml",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa-demo\n  labels:\n    app: ssa-demo\nspec:\n  containers:\n  - name: main\n    image: nginx:1.27\n"},
	{"POST", "/api/v1/namespaces/internals-demo/pods", "application/json", demoPod("web-86d8686cfb-84dk9", "web", "nginx:1.27")},
	{"POST", "/api/v1/namespaces/internals-demo/pods", "application/json", demoPod("gc-demo4-54cd5f4cd9-7jhlq", "gc-demo4", "busybox:1.36")},
	{"POST", "/api/v1/namespaces/internals-demo/pods", "application/json", demoPod("gc-demo4-54cd5f4cd9-lddmh", "gc-demo4", "busybox:1.36")},
	{"POST", "/api/v1/namespaces/internals-demo/pods", "application/json", demoPod("ssa-merge-demo-78fd5b47c4-9pk7t", "ssa-merge-demo", "nginx:1.27")},
	{"POST", "/api/v1/namespaces/internals-demo/pods", "application/json", demoPod("ssa-atomic-demo-864644447-lg556", "ssa-atomic-demo", "nginx:1.27")},
}

func demoPod(name, app, image string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":%q}},"spec":{"containers":[{"name":"main","image":%q}]}}`, name, app, image)
}

// SeedDemo creates the lesson's namespace and pods on first start; once the
// namespace exists (even emptied by a student) it is left alone. asSystem
// marks each request as kubelab's own, for the server's front door.
func (a *API) SeedDemo(ctx context.Context, h http.Handler, asSystem func(*http.Request) *http.Request) error {
	nsStore, _ := a.Store(coreV1.WithResource("namespaces"))
	if _, err := nsStore.Get(ctx, storage.Key{Name: DemoNamespace}, ""); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	for _, d := range demoRequests {
		req := httptest.NewRequestWithContext(ctx, d.method, d.path, strings.NewReader(d.body))
		req.Header.Set("Content-Type", d.contentType)
		req.Header.Set("User-Agent", "kubelab-demo/v1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, asSystem(req))
		if rec.Code == http.StatusConflict {
			continue // another replica sharing this etcd is seeding too
		}
		if rec.Code >= 300 {
			return fmt.Errorf("seeding the demo: %s %s: %d %s", d.method, d.path, rec.Code, rec.Body.String())
		}
	}
	return nil
}
