package storage

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RootPrefix is where every Kubernetes object lives in etcd, as in kube-apiserver.
const RootPrefix = "/registry/"

// ResourcePrefix is the etcd prefix of a resource: "/registry/pods" for a
// built-in kind, "/registry/<group>/<resource>" for a custom resource.
func ResourcePrefix(gr schema.GroupResource, custom bool) string {
	if custom {
		return RootPrefix + gr.Group + "/" + gr.Resource
	}
	return RootPrefix + gr.Resource
}

// Key names one object in etcd.
type Key struct {
	Namespace string
	Name      string
}

// ObjectKey builds the etcd key of an object under prefix:
// "<prefix>/<namespace>/<name>", or "<prefix>/<name>" when cluster-scoped.
// Names that could not be a path segment are refused, as kube-apiserver does.
func ObjectKey(prefix string, gr schema.GroupResource, namespaced bool, k Key) (string, error) {
	if k.Name == "" {
		return "", &Error{Code: CodeInvalidKey, Resource: gr, Message: "Name parameter required."}
	}
	if msgs := path.IsValidPathSegmentName(k.Name); len(msgs) != 0 {
		return "", &Error{Code: CodeInvalidKey, Resource: gr, Name: k.Name,
			Message: "Name parameter invalid: \"" + k.Name + "\": " + strings.Join(msgs, ";")}
	}
	if !namespaced {
		if k.Namespace != "" {
			return "", &Error{Code: CodeInvalidKey, Resource: gr, Name: k.Name,
				Message: "Namespace parameter not allowed: " + gr.String() + " is cluster-scoped."}
		}
		return prefix + "/" + k.Name, nil
	}
	if k.Namespace == "" {
		return "", &Error{Code: CodeInvalidKey, Resource: gr, Name: k.Name, Message: "Namespace parameter required."}
	}
	if msgs := path.IsValidPathSegmentName(k.Namespace); len(msgs) != 0 {
		return "", &Error{Code: CodeInvalidKey, Resource: gr, Name: k.Name,
			Message: "Namespace parameter invalid: \"" + k.Namespace + "\": " + strings.Join(msgs, ";")}
	}
	return prefix + "/" + k.Namespace + "/" + k.Name, nil
}

// ListPrefix is the etcd prefix holding every object of a list: the whole
// resource, or one namespace of it. It ends in "/" so that namespace "a"
// does not also match namespace "ab".
func ListPrefix(prefix string, gr schema.GroupResource, namespace string) (string, error) {
	if namespace == "" {
		return prefix + "/", nil
	}
	if msgs := path.IsValidPathSegmentName(namespace); len(msgs) != 0 {
		return "", &Error{Code: CodeInvalidKey, Resource: gr,
			Message: "Namespace parameter invalid: \"" + namespace + "\": " + strings.Join(msgs, ";")}
	}
	return prefix + "/" + namespace + "/", nil
}
