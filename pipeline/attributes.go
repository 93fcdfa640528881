package pipeline

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operation is what admission sees a request do, as in k8s.io/apiserver's
// admission.Operation: several verbs map to one operation.
type Operation string

// The admission operations.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// OperationFor is the admission operation of an API verb, or "" for the
// verbs that never reach admission (get, list, watch).
func OperationFor(verb string) Operation {
	switch verb {
	case "create":
		return Create
	case "update", "patch":
		return Update
	case "delete", "deletecollection":
		return Delete
	case "connect":
		return Connect
	}
	return ""
}

// Attributes are everything each stage learns about a request: what the
// authorizer checks and what an admission plugin gets in kube-apiserver
// (authorizer.Attributes and admission.Attributes in one struct).
type Attributes struct {
	User User
	// Verb is the API verb: get, list, watch, create, update, patch, delete,
	// deletecollection; for a non-resource request, the lowercased HTTP method.
	Verb string
	// Operation is the admission operation; "" for reads.
	Operation Operation
	// IsResourceRequest is false for non-resource URLs such as /version,
	// /healthz and discovery (/api, /apis), which authorize by Path.
	IsResourceRequest bool
	// Path is the request's URL path, used for non-resource requests.
	Path        string
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	// Namespace is the request's namespace. As in kube-apiserver, a request
	// for a namespace object itself (/api/v1/namespaces/x) has Namespace "x".
	Namespace string
	// Name is the object's name from the URL; empty for create and list.
	Name string
	// Kind is the kind of Object.
	Kind schema.GroupVersionKind
	// Object is the object being written; mutating plugins may change it.
	Object runtime.Object
	// OldObject is the stored object an update or delete replaces.
	OldObject runtime.Object
	// Options are the request's Create/Update/DeleteOptions, if any.
	Options runtime.Object
	DryRun  bool
}

// GroupResource names the resource in errors, e.g. "pods" or
// "roles.rbac.authorization.k8s.io".
func (a *Attributes) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
}

// GroupVersionResource is the resource with its version.
func (a *Attributes) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: a.APIGroup, Version: a.APIVersion, Resource: a.Resource}
}

// sanitizer escapes what kube-apiserver escapes in a 403 message, so that
// a name echoed back cannot inject markup.
var sanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// ForbiddenMessage is kube-apiserver's sentence for a request the
// authorizer refused, e.g. `User "alice" cannot list resource "pods" in
// API group "" in the namespace "bob"`.
func ForbiddenMessage(a *Attributes) string {
	if !a.IsResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Name, a.Verb, resource, a.APIGroup)
}

// Forbidden is the 403 Status kube-apiserver sends when authorization
// refuses a request: `pods is forbidden: User "alice" cannot list ...`,
// with the authorizer's reason (if any) after a colon.
func Forbidden(a *Attributes, reason string) *apierrors.StatusError {
	msg := sanitizer.Replace(ForbiddenMessage(a))
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(a.GroupResource(), a.Name, fmt.Errorf("%s", msg))
}

// Unauthorized is the 401 Status kube-apiserver sends for credentials it
// cannot verify; its body is exactly kube's.
func Unauthorized() *apierrors.StatusError {
	return apierrors.NewUnauthorized("Unauthorized")
}
