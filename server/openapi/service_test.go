package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/labstack/echo/v4"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// labResources is a realistic resource set: what the lesson's server serves.
func labResources() []Resource {
	core, rbac := schema.GroupVersion{Version: "v1"}, rbacv1.SchemeGroupVersion
	return []Resource{
		{GroupVersion: core, Resource: "namespaces", Kind: "Namespace", Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			Subresources: []string{"status", "finalize"}, Object: &corev1.Namespace{}, List: &corev1.NamespaceList{}},
		{GroupVersion: core, Resource: "pods", Kind: "Pod", Namespaced: true, Verbs: allVerbs, Subresources: []string{"status"}, Object: &corev1.Pod{}, List: &corev1.PodList{}},
		{GroupVersion: core, Resource: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs, Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}},
		{GroupVersion: core, Resource: "secrets", Kind: "Secret", Namespaced: true, Verbs: allVerbs, Object: &corev1.Secret{}, List: &corev1.SecretList{}},
		{GroupVersion: core, Resource: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true, Verbs: allVerbs, Object: &corev1.ServiceAccount{}, List: &corev1.ServiceAccountList{}},
		{GroupVersion: core, Resource: "events", Kind: "Event", Namespaced: true, Verbs: allVerbs, Object: &corev1.Event{}, List: &corev1.EventList{}},
		{GroupVersion: rbac, Resource: "roles", Kind: "Role", Namespaced: true, Verbs: allVerbs, Object: &rbacv1.Role{}, List: &rbacv1.RoleList{}},
		{GroupVersion: rbac, Resource: "rolebindings", Kind: "RoleBinding", Namespaced: true, Verbs: allVerbs, Object: &rbacv1.RoleBinding{}, List: &rbacv1.RoleBindingList{}},
		{GroupVersion: rbac, Resource: "clusterroles", Kind: "ClusterRole", Verbs: allVerbs, Object: &rbacv1.ClusterRole{}, List: &rbacv1.ClusterRoleList{}},
		{GroupVersion: rbac, Resource: "clusterrolebindings", Kind: "ClusterRoleBinding", Verbs: allVerbs, Object: &rbacv1.ClusterRoleBinding{}, List: &rbacv1.ClusterRoleBindingList{}},
	}
}

// deployments adds a named group with a subresource of another group's kind.
var deployments = Resource{GroupVersion: appsv1.SchemeGroupVersion, Resource: "deployments", Kind: "Deployment", Namespaced: true,
	Verbs: allVerbs, Subresources: []string{"status", "scale"}, Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{}}

// serve builds a Service and serves it the way the server does: on Echo,
// through httptest.
func serve(t *testing.T, resources []Resource) (*Service, *httptest.Server) {
	t.Helper()
	s, err := New(resources, Info{Title: "Kubernetes", Version: "v1.37.2"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e := echo.New()
	s.Register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return s, srv
}

// newServer serves e through httptest and returns its URL.
func newServer(t *testing.T, e *echo.Echo) string {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

// get fetches path with an optional Accept header and fails on a non-200.
func get(t *testing.T, srv *httptest.Server, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	return resp, body
}

// discovery is the /openapi/v3 document, as client-go's openapi client reads it.
type discovery struct {
	Paths map[string]struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	} `json:"paths"`
}

func getDiscovery(t *testing.T, srv *httptest.Server) discovery {
	t.Helper()
	_, body := get(t, srv, "/openapi/v3", "")
	var d discovery
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("decoding /openapi/v3: %v", err)
	}
	return d
}

// getV3 fetches a group version's v3 document by its discovery URL.
func getV3(t *testing.T, srv *httptest.Server, name string) *spec3.OpenAPI {
	t.Helper()
	gv, ok := getDiscovery(t, srv).Paths[name]
	if !ok {
		t.Fatalf("/openapi/v3 does not list %q", name)
	}
	if !strings.Contains(gv.ServerRelativeURL, "?hash=") {
		t.Errorf("%s: serverRelativeURL %q has no hash", name, gv.ServerRelativeURL)
	}
	_, body := get(t, srv, gv.ServerRelativeURL, "application/json")
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal(body, doc); err != nil {
		t.Fatalf("decoding %s: %v", name, err)
	}
	return doc
}

func TestV3Discovery(t *testing.T) {
	_, srv := serve(t, labResources())
	var names []string
	for name := range getDiscovery(t, srv).Paths {
		names = append(names, name)
	}
	sort.Strings(names)
	// What `kubectl get --raw /openapi/v3 | jq -r '.paths | keys'` shows.
	want := []string{"api", "api/v1", "apis", "apis/rbac.authorization.k8s.io", "apis/rbac.authorization.k8s.io/v1", "version"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("paths = %q, want %q", names, want)
	}
}

func TestV3CoreV1(t *testing.T) {
	_, srv := serve(t, labResources())
	doc := getV3(t, srv, "api/v1")

	pod := doc.Components.Schemas["io.k8s.api.core.v1.Pod"]
	if pod == nil {
		t.Fatal("no io.k8s.api.core.v1.Pod schema")
	}
	if got := gvks(t, pod.Extensions); got != "/v1/Pod" {
		t.Errorf("Pod x-kubernetes-group-version-kind = %q", got)
	}
	podSpec := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]
	if podSpec == nil || !strings.HasPrefix(podSpec.Properties["containers"].Description, "List of containers belonging to the pod.") {
		t.Errorf("PodSpec.containers lost its description: %+v", podSpec)
	}
	if got := gvks(t, doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"].Extensions); got != "/v1/WatchEvent" {
		t.Errorf("WatchEvent GVKs in api/v1 = %q, want only the core one", got)
	}

	item := doc.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"]
	if item == nil || item.Patch == nil {
		t.Fatal("no PATCH /api/v1/namespaces/{namespace}/pods/{name}")
	}
	if item.Patch.OperationId != "patchCoreV1NamespacedPod" || item.Patch.Extensions["x-kubernetes-action"] != "patch" {
		t.Errorf("patch operation = %q, action %v", item.Patch.OperationId, item.Patch.Extensions["x-kubernetes-action"])
	}
	var contentTypes []string
	for ct := range item.Patch.RequestBody.Content {
		contentTypes = append(contentTypes, ct)
	}
	sort.Strings(contentTypes)
	if got := strings.Join(contentTypes, " "); got != "application/apply-patch+yaml application/json-patch+json application/merge-patch+json application/strategic-merge-patch+json" {
		t.Errorf("patch content types = %s", got)
	}
	if err := supportsFieldValidation(doc, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}); err != nil {
		t.Error(err)
	}
	for path, op := range map[string]string{
		"/api/v1/":     "getCoreV1APIResources",
		"/api/v1/pods": "listCoreV1PodForAllNamespaces",
		"/api/v1/watch/namespaces/{namespace}/pods":         "watchCoreV1NamespacedPodList",
		"/api/v1/watch/namespaces/{namespace}/pods/{name}":  "watchCoreV1NamespacedPod",
		"/api/v1/namespaces/{namespace}/pods/{name}/status": "readCoreV1NamespacedPodStatus",
		"/api/v1/namespaces/{name}/finalize":                "",
	} {
		item := doc.Paths.Paths[path]
		if item == nil {
			t.Errorf("no path %s", path)
		} else if op != "" && item.Get.OperationId != op {
			t.Errorf("GET %s = %q, want %q", path, item.Get.OperationId, op)
		}
	}
}

// supportsFieldValidation is kubectl's check (cli-runtime's
// queryParamVerifierV3): the PATCH operation of the kind has a
// fieldValidation query parameter.
func supportsFieldValidation(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) error {
	for _, path := range doc.Paths.Paths {
		if path == nil || path.Patch == nil {
			continue
		}
		var opGVK map[string]string
		if err := path.Patch.Extensions.GetObject("x-kubernetes-group-version-kind", &opGVK); err != nil {
			continue
		}
		if opGVK["group"] != gvk.Group || opGVK["version"] != gvk.Version || opGVK["kind"] != gvk.Kind {
			continue
		}
		for _, p := range path.Patch.Parameters {
			if p.Name == "fieldValidation" && p.In == "query" {
				return nil
			}
		}
		return &paramError{gvk}
	}
	return &paramError{gvk}
}

type paramError struct{ gvk schema.GroupVersionKind }

func (e *paramError) Error() string { return "no PATCH with fieldValidation for " + e.gvk.String() }

// gvks renders an x-kubernetes-group-version-kind list as "g/v/K,...".
func gvks(t *testing.T, ext spec.Extensions) string {
	t.Helper()
	var list []metav1.GroupVersionKind
	if err := ext.GetObject("x-kubernetes-group-version-kind", &list); err != nil {
		t.Fatalf("x-kubernetes-group-version-kind: %v", err)
	}
	var out []string
	for _, k := range list {
		out = append(out, k.Group+"/"+k.Version+"/"+k.Kind)
	}
	return strings.Join(out, ",")
}

func TestV3RBAC(t *testing.T) {
	_, srv := serve(t, labResources())
	doc := getV3(t, srv, "apis/rbac.authorization.k8s.io/v1")
	item := doc.Paths.Paths["/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}"]
	if item == nil || item.Patch == nil || item.Patch.OperationId != "patchRbacAuthorizationV1NamespacedRole" {
		t.Fatalf("no patchRbacAuthorizationV1NamespacedRole: %+v", item)
	}
	if err := supportsFieldValidation(doc, rbacv1.SchemeGroupVersion.WithKind("Role")); err != nil {
		t.Error(err)
	}
	if doc.Components.Schemas["io.k8s.api.core.v1.Pod"] != nil {
		t.Error("the rbac document carries core schemas it does not use")
	}
	if got := gvks(t, doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"].Extensions); got != "/v1/DeleteOptions,rbac.authorization.k8s.io/v1/DeleteOptions" {
		t.Errorf("DeleteOptions GVKs in rbac/v1 = %q", got)
	}
}

func TestV3UnknownGroupVersion(t *testing.T) {
	_, srv := serve(t, labResources())
	resp, err := srv.Client().Get(srv.URL + "/openapi/v3/apis/apps/v1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group version: %s, want 404", resp.Status)
	}
}

func TestV2(t *testing.T) {
	_, srv := serve(t, labResources())
	t.Run("Protobuf", func(t *testing.T) {
		// What kubectl asks for.
		resp, body := get(t, srv, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
		if ct := resp.Header.Get("Content-Type"); ct != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" { // kube-openapi answers with this spelling
			t.Errorf("Content-Type = %q", ct)
		}
		doc := &openapi_v2.Document{}
		if err := proto.Unmarshal(body, doc); err != nil {
			t.Fatalf("parsing protobuf: %v", err)
		}
		var found bool
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			found = found || d.GetName() == "io.k8s.api.core.v1.Pod"
		}
		if !found || doc.GetInfo().GetVersion() != "v1.37.2" {
			t.Errorf("protobuf document: Pod found %v, info %v", found, doc.GetInfo())
		}
	})
	t.Run("JSON", func(t *testing.T) {
		resp, body := get(t, srv, "/openapi/v2", "")
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		doc := &spec.Swagger{}
		if err := json.Unmarshal(body, doc); err != nil {
			t.Fatalf("parsing JSON: %v", err)
		}
		op := doc.Paths.Paths["/apis/rbac.authorization.k8s.io/v1/clusterroles"].Delete
		if op == nil || op.ID != "deleteRbacAuthorizationV1CollectionClusterRole" {
			t.Errorf("deletecollection of ClusterRole = %+v", op)
		}
		if _, ok := doc.Definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
			t.Error("no ObjectMeta definition")
		}
	})
}
