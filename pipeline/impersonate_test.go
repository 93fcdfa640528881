package pipeline_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/rbac"
)

// editInAlice is what the edit ClusterRole bound in namespace alice allows
// about impersonation: the service accounts of alice, and nothing else.
type editInAlice struct{}

func (editInAlice) Authorize(a *pipeline.Attributes) (bool, string) {
	rule := rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts"}}
	return a.Namespace == "alice" && rbac.RuleAllows(a, &rule), ""
}

// TestImpersonatedServiceAccountNamesFollowKube: only
// system:serviceaccount:<namespace>:<name> with a DNS label namespace and a
// DNS subdomain name is a service account, as k8s.io/apiserver's
// serviceaccount.SplitUsername decides; any other name is asked as a user,
// so a student who may impersonate her own service accounts gets 403 for
// it, as kube-apiserver answers, and never a made-up identity.
func TestImpersonatedServiceAccountNamesFollowKube(t *testing.T) {
	p := &pipeline.Pipeline{Authz: editInAlice{}}
	alice := pipeline.User{Name: "alice", Groups: []string{"kubelab:students", pipeline.AllAuthenticated}}
	as := func(name string) (pipeline.User, error) {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/alice/pods", nil)
		r.Header.Set(pipeline.ImpersonateUserHeader, name)
		return p.Impersonate(pipeline.NewTrace(r), r, alice)
	}
	t.Run("OK", func(t *testing.T) {
		u, err := as("system:serviceaccount:alice:default")
		if err != nil || u.Name != "system:serviceaccount:alice:default" ||
			!slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:alice", pipeline.AllAuthenticated}) {
			t.Fatalf("as alice's default service account: %+v %v", u, err)
		}
	})
	for _, name := range []string{
		"system:serviceaccount:alice:default:x", // three parts
		"system:serviceaccount:alice:",          // no name
		"system:serviceaccount::default",        // no namespace
		"system:serviceaccount:alice",           // no separator
		"system:serviceaccount:Alice:default",   // not a DNS label
		"system:serviceaccount:alice:Default",   // not a DNS subdomain
		"system:serviceaccount:alice:a/b",
	} {
		t.Run("Err "+name, func(t *testing.T) {
			u, err := as(name)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("as %q: %+v %v, want 403", name, u, err)
			}
			want := `users "` + name + `" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`
			if err.Error() != want {
				t.Fatalf("as %q:\n got %s\nwant %s", name, err, want)
			}
		})
	}
}
