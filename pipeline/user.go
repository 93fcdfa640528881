package pipeline

import "slices"

// The identities and groups Kubernetes gives every request, with the names
// kube-apiserver uses, so RBAC bindings written for a real cluster work here.
const (
	// AnonymousUser is who a request without credentials is.
	AnonymousUser = "system:anonymous"
	// AllUnauthenticated is the group of every anonymous request.
	AllUnauthenticated = "system:unauthenticated"
	// AllAuthenticated is the group of every request with valid credentials.
	AllAuthenticated = "system:authenticated"
	// SystemPrivilegedGroup is the group kube-apiserver allows everything,
	// before and regardless of RBAC.
	SystemPrivilegedGroup = "system:masters"
)

// User is who sent a request: kube's user.Info as a plain value, so the
// pipeline does not pull in k8s.io/apiserver.
type User struct {
	Name   string              `json:"name"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// Anonymous is the user of a request that carried no credentials.
func Anonymous() User {
	return User{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}
}

// InGroup reports whether the user is a member of group.
func (u User) InGroup(group string) bool { return slices.Contains(u.Groups, group) }

// IsAnonymous reports whether the request carried no credentials.
func (u User) IsAnonymous() bool { return u.Name == AnonymousUser }
