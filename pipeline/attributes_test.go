package pipeline_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/storage"
)

func TestForbiddenMessageIsKubes(t *testing.T) {
	alice := pipeline.User{Name: "alice"}
	for _, tc := range []struct {
		name   string
		attrs  pipeline.Attributes
		reason string
		want   string
	}{
		{"OK/namespaced list", pipeline.Attributes{User: alice, Verb: "list", IsResourceRequest: true, Resource: "pods", Namespace: "bob"}, "",
			`pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "bob"`},
		{"OK/cluster scope", pipeline.Attributes{User: alice, Verb: "list", IsResourceRequest: true, Resource: "namespaces"}, "",
			`namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope`},
		{"OK/named subresource", pipeline.Attributes{User: alice, Verb: "get", IsResourceRequest: true, Resource: "pods", Subresource: "status", Namespace: "bob", Name: "web"}, "",
			`pods "web" is forbidden: User "alice" cannot get resource "pods/status" in API group "" in the namespace "bob"`},
		{"OK/named group", pipeline.Attributes{User: alice, Verb: "delete", IsResourceRequest: true, APIGroup: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: "bob", Name: "edit"}, "",
			`rolebindings.rbac.authorization.k8s.io "edit" is forbidden: User "alice" cannot delete resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "bob"`},
		{"OK/namespace object", pipeline.Attributes{User: alice, Verb: "get", IsResourceRequest: true, Resource: "namespaces", Namespace: "bob", Name: "bob"}, "",
			`namespaces "bob" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "bob"`},
		{"OK/non-resource", pipeline.Attributes{User: pipeline.User{Name: "x"}, Verb: "get", Path: "/foo"}, "",
			`forbidden: User "x" cannot get path "/foo"`},
		{"OK/reason appended", pipeline.Attributes{User: alice, Verb: "get", IsResourceRequest: true, Resource: "pods", Namespace: "bob"}, `RBAC: role.rbac.authorization.k8s.io "gone" not found`,
			`pods is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "bob": RBAC: role.rbac.authorization.k8s.io "gone" not found`},
		{"OK/markup escaped", pipeline.Attributes{User: pipeline.User{Name: "<b>"}, Verb: "get", Path: "/a&b"}, "",
			`forbidden: User "&lt;b&gt;" cannot get path "/a&amp;b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pipeline.Forbidden(&tc.attrs, tc.reason)
			if got := err.Error(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if !apierrors.IsForbidden(err) || err.Status().Code != http.StatusForbidden {
				t.Fatalf("not a 403 Forbidden: %+v", err.Status())
			}
			if d := err.Status().Details; d == nil || d.Kind != tc.attrs.Resource || d.Name != tc.attrs.Name || d.Group != tc.attrs.APIGroup {
				t.Fatalf("details %+v do not name the resource", d)
			}
		})
	}
}

func TestUnauthorizedBodyIsKubes(t *testing.T) {
	st := pipeline.Unauthorized().Status()
	st.Kind, st.APIVersion = "Status", "v1" // as the server's error handler sets them
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestOperationFor(t *testing.T) {
	for verb, want := range map[string]pipeline.Operation{
		"create": pipeline.Create, "update": pipeline.Update, "patch": pipeline.Update,
		"delete": pipeline.Delete, "deletecollection": pipeline.Delete,
		"get": "", "list": "", "watch": "",
	} {
		if got := pipeline.OperationFor(verb); got != want {
			t.Errorf("OperationFor(%q) = %q, want %q", verb, got, want)
		}
	}
}

func TestDecisionFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want pipeline.Decision
	}{
		{"OK/nil", nil, pipeline.Allow},
		{"Deny/forbidden", apierrors.NewForbidden(podsGR, "x", errors.New("no")), pipeline.Deny},
		{"Deny/wrapped not found", fmt.Errorf("lookup: %w", apierrors.NewNotFound(podsGR, "x")), pipeline.Deny},
		{"Deny/storage conflict", &storage.Error{Code: storage.CodeConflict}, pipeline.Deny},
		{"Error/storage unavailable", &storage.Error{Code: storage.CodeUnavailable}, pipeline.Error},
		{"Error/internal", apierrors.NewInternalError(errors.New("boom")), pipeline.Error},
		{"Error/plain", errors.New("boom"), pipeline.Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pipeline.DecisionFor(tc.err); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
