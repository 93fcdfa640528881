package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/storage"
)

// DemoNamespace is the lesson's namespace, with the lesson's pods in it.
const DemoNamespace = "internals-demo"

// SeedRequest is one request that builds lesson state through the API.
type SeedRequest struct{ Method, Path, ContentType, Body string }

// DemoRequests build the lesson's world in namespace ns through the API
// itself, so the objects (and their managedFields) are what those requests
// make on a real cluster: ssa-demo is applied by manager-a, as the lesson's
// etcdctl shows. labels go on the namespace.
func DemoRequests(ns string, labels map[string]string) []SeedRequest {
	nsObj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": labels}})
	pods := "/api/v1/namespaces/" + ns + "/pods"
	return []SeedRequest{
		{"POST", "/api/v1/namespaces", "application/json", string(nsObj)},
		{"PATCH", pods + "/ssa-demo?fieldManager=manager-a", "application/apply-patch+yaml",
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa-demo\n  labels:\n    app: ssa-demo\nspec:\n  containers:\n  - name: main\n    image: nginx:1.27\n"},
		{"POST", pods, "application/json", demoPod("web-86d8686cfb-84dk9", "web", "nginx:1.27")},
		{"POST", pods, "application/json", demoPod("gc-demo4-54cd5f4cd9-7jhlq", "gc-demo4", "busybox:1.36")},
		{"POST", pods, "application/json", demoPod("gc-demo4-54cd5f4cd9-lddmh", "gc-demo4", "busybox:1.36")},
		{"POST", pods, "application/json", demoPod("ssa-merge-demo-78fd5b47c4-9pk7t", "ssa-merge-demo", "nginx:1.27")},
		{"POST", pods, "application/json", demoPod("ssa-atomic-demo-864644447-lg556", "ssa-atomic-demo", "nginx:1.27")},
	}
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
	return Seed(ctx, h, asSystem, DemoRequests(DemoNamespace, nil))
}

// Seed makes each request through h, as asSystem marks, in order. A
// Conflict (the object exists: another replica, or an earlier attempt,
// made it) is not an error, so seeding can be retried.
func Seed(ctx context.Context, h http.Handler, asSystem func(*http.Request) *http.Request, requests []SeedRequest) error {
	for _, d := range requests {
		err := Do(ctx, h, asSystem, d)
		if st, ok := err.(apierrors.APIStatus); ok && st.Status().Code == http.StatusConflict {
			continue // AlreadyExists, or a Conflict
		}
		if err != nil {
			return fmt.Errorf("seeding: %s %s: %w", d.Method, d.Path, err)
		}
	}
	return nil
}

// Do makes one request in-process through h, as mark says who makes it
// (kubelab itself, or a user the front door has authenticated already),
// so that it passes the same pipeline, RBAC and trace as the same request
// from kubectl. A response that is not a success is returned as its
// Status error.
func Do(ctx context.Context, h http.Handler, mark func(*http.Request) *http.Request, d SeedRequest) error {
	req := httptest.NewRequestWithContext(ctx, d.Method, d.Path, strings.NewReader(d.Body))
	if d.ContentType != "" {
		req.Header.Set("Content-Type", d.ContentType)
	}
	req.Header.Set("User-Agent", "kubelab-seed/v1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, mark(req))
	if rec.Code < 300 {
		return nil
	}
	var st metav1.Status
	if json.Unmarshal(rec.Body.Bytes(), &st) != nil || st.Kind != "Status" {
		return apierrors.NewGenericServerResponse(rec.Code, d.Method, schema.GroupResource{}, "", rec.Body.String(), 0, false)
	}
	return &apierrors.StatusError{ErrStatus: st}
}
