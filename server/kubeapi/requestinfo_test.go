package kubeapi

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestParseRequestInfo: paths read as kube-apiserver reads them, and the
// namespace of the object's key told apart from the namespace object.
func TestParseRequestInfo(t *testing.T) {
	t.Parallel()
	core, apps := schema.GroupVersion{Version: "v1"}, schema.GroupVersion{Group: "apps", Version: "v1"}
	for _, tc := range []struct {
		name, method, url string
		want              *requestInfo // nil: not served
	}{
		{"APIVersions", "GET", "/api", &requestInfo{Prefix: "api", Verb: "get", HasGroup: true}},
		{"CoreResourceList", "GET", "/api/v1", &requestInfo{Prefix: "api", Verb: "get", HasGroup: true, HasVersion: true, GroupVersion: core}},
		{"GroupList", "GET", "/apis", &requestInfo{Prefix: "apis", Verb: "get"}},
		{"Group", "GET", "/apis/apps", &requestInfo{Prefix: "apis", Verb: "get", HasGroup: true, GroupVersion: schema.GroupVersion{Group: "apps"}}},
		{"GroupVersion", "GET", "/apis/apps/v1", &requestInfo{Prefix: "apis", Verb: "get", HasGroup: true, HasVersion: true, GroupVersion: apps}},
		{"List", "GET", "/api/v1/namespaces/demo/pods", &requestInfo{Prefix: "api", Verb: "list", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"ListAllNamespaces", "GET", "/apis/apps/v1/deployments", &requestInfo{Prefix: "apis", Verb: "list", HasGroup: true, HasVersion: true, GroupVersion: apps, Resource: "deployments"}},
		{"ListByName", "GET", "/api/v1/namespaces/demo/pods?fieldSelector=metadata.name%3Dweb", &requestInfo{Prefix: "api", Verb: "list", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods", Name: "web"}},
		{"WatchQuery", "GET", "/api/v1/namespaces/demo/pods?watch=true", &requestInfo{Prefix: "api", Verb: "watch", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"WatchFalse", "GET", "/api/v1/namespaces/demo/pods?watch=false", &requestInfo{Prefix: "api", Verb: "list", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"WatchFalseAnyCase", "GET", "/api/v1/namespaces/demo/pods?watch=False", &requestInfo{Prefix: "api", Verb: "list", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"WatchEmpty", "GET", "/api/v1/namespaces/demo/pods?watch=", &requestInfo{Prefix: "api", Verb: "watch", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		// kube reads any watch value but false and 0 as a watch.
		{"WatchYes", "GET", "/api/v1/namespaces/demo/pods?watch=yes", &requestInfo{Prefix: "api", Verb: "watch", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"WatchPath", "GET", "/api/v1/watch/namespaces/demo/pods/web", &requestInfo{Prefix: "api", Verb: "watch", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods", Name: "web"}},
		{"PostToWatchPath", "POST", "/api/v1/watch/namespaces/demo/pods", &requestInfo{Prefix: "api", Verb: "", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"Status", "PUT", "/api/v1/namespaces/demo/pods/web/status", &requestInfo{Prefix: "api", Verb: "update", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods", Name: "web", Subresource: "status"}},
		{"DeleteCollection", "DELETE", "/api/v1/namespaces/demo/pods", &requestInfo{Prefix: "api", Verb: "deletecollection", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "pods"}},
		{"NamespaceObject", "GET", "/api/v1/namespaces/demo", &requestInfo{Prefix: "api", Verb: "get", HasGroup: true, HasVersion: true, GroupVersion: core, Resource: "namespaces", Name: "demo"}},
		{"NamespaceFinalize", "PUT", "/api/v1/namespaces/demo/finalize", &requestInfo{Prefix: "api", Verb: "update", HasGroup: true, HasVersion: true, GroupVersion: core, Resource: "namespaces", Name: "demo", Subresource: "finalize"}},
		{"NamespacesInANamespace", "GET", "/api/v1/namespaces/demo/namespaces/demo", &requestInfo{Prefix: "api", Verb: "get", HasGroup: true, HasVersion: true, GroupVersion: core, Namespace: "demo", Resource: "namespaces", Name: "demo"}},
		{"ErrNotAPI", "GET", "/healthz", nil},
		{"ErrProxyVerb", "GET", "/api/v1/proxy/namespaces/demo/pods/web", nil},
		{"ErrBelowSubresource", "GET", "/api/v1/namespaces/demo/pods/web/status/extra", nil},
		{"ErrWatchNothing", "GET", "/api/v1/watch", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseRequestInfo(httptest.NewRequest(tc.method, tc.url, nil))
			if got != nil {
				got.kube = nil
			}
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %+v, want not served", *got)
			case tc.want != nil && got == nil:
				t.Fatalf("not served, want %+v", *tc.want)
			case tc.want != nil && *got != *tc.want:
				t.Fatalf("got  %+v\nwant %+v", *got, *tc.want)
			}
		})
	}
}
