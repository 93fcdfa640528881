package rbac_test

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/internal/storetest"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// cluster is the four RBAC stores over a real etcd, with the default
// policy written, and an authorizer fed by their watches.
type cluster struct {
	roles, roleBindings, clusterRoles, clusterRoleBindings *etcd3.Store
	authz                                                  *rbac.Authorizer
}

func newCluster(t testing.TB, seed func(c *cluster)) *cluster {
	t.Helper()
	client := storagetest.StartEtcd(t).Client()
	c := &cluster{
		roles:               storetest.Store(t, client, storetest.Roles, nil),
		roleBindings:        storetest.Store(t, client, storetest.RoleBindings, nil),
		clusterRoles:        storetest.Store(t, client, storetest.ClusterRoles, nil),
		clusterRoleBindings: storetest.Store(t, client, storetest.ClusterRoleBindings, nil),
	}
	if err := rbac.EnsureBootstrapPolicy(storetest.Ctx(t), c.clusterRoles, c.clusterRoleBindings); err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		seed(c)
	}
	c.authz = rbac.New(rbac.Sources{Roles: c.roles, RoleBindings: c.roleBindings,
		ClusterRoles: c.clusterRoles, ClusterRoleBindings: c.clusterRoleBindings}, storetest.Quiet())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.authz.Start(ctx)
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := c.authz.WaitForSync(wait); err != nil {
		t.Fatalf("start authorizer: %v", err)
	}
	return c
}

// studentBinding is what classroom mode creates per student: `edit` in
// the student's own namespace.
func studentBinding(name string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
	}
}

func student(name string) pipeline.User {
	return pipeline.User{Name: name, Groups: []string{pipeline.AllAuthenticated}}
}

var (
	alice = student("alice")
	anon  = pipeline.Anonymous()
	root  = pipeline.User{Name: "kubelab-admin", Groups: []string{pipeline.SystemPrivilegedGroup, pipeline.AllAuthenticated}}
	saBot = pipeline.User{Name: "system:serviceaccount:alice:bot", Groups: []string{"system:serviceaccounts", pipeline.AllAuthenticated}}
)

func res(u pipeline.User, verb, group, resource, sub, ns, name string) *pipeline.Attributes {
	return &pipeline.Attributes{User: u, Verb: verb, IsResourceRequest: true, APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func path(u pipeline.User, verb, p string) *pipeline.Attributes {
	return &pipeline.Attributes{User: u, Verb: verb, Path: p}
}

// TestCanI is `kubectl auth can-i` for a table of cases; each denial must
// carry kube's exact 403 message.
func TestCanI(t *testing.T) {
	c := newCluster(t, func(c *cluster) {
		for _, s := range []string{"alice", "bob"} {
			storetest.Create(t, c.roleBindings, studentBinding(s))
		}
		storetest.Create(t, c.roles, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "alice", Name: "read-cfg"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}}}})
		storetest.Create(t, c.roleBindings, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "alice", Name: "bot"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-cfg"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bot"}}})
		storetest.Create(t, c.roleBindings, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "carol", Name: "dangling"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nope"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}})
	})
	for _, tc := range []struct {
		name   string
		attrs  *pipeline.Attributes
		allow  bool
		reason string // for allowed: the exact reason; for denied: the exact 403 message
	}{
		{"OK/own namespace list", res(alice, "list", "", "pods", "", "alice", ""), true,
			`RBAC: allowed by RoleBinding "edit/alice" of ClusterRole "edit" to User "alice"`},
		{"OK/own namespace create", res(alice, "create", "", "pods", "", "alice", ""), true, ""},
		{"OK/own namespace object", res(alice, "get", "", "namespaces", "", "alice", "alice"), true, ""},
		{"OK/own pod status read", res(alice, "get", "", "pods", "status", "alice", "web"), true, ""},
		{"OK/own secrets", res(alice, "get", "", "secrets", "", "alice", "s"), true, ""},
		{"ErrOtherNamespace", res(alice, "list", "", "pods", "", "bob", ""), false,
			`pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "bob"`},
		{"ErrOtherNamespaceWatch", res(alice, "watch", "", "pods", "", "bob", ""), false,
			`pods is forbidden: User "alice" cannot watch resource "pods" in API group "" in the namespace "bob"`},
		{"ErrOtherNamespaceObject", res(alice, "get", "", "namespaces", "", "bob", "bob"), false,
			`namespaces "bob" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "bob"`},
		{"ErrClusterScope", res(alice, "list", "", "namespaces", "", "", ""), false,
			`namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope`},
		{"ErrPodStatusWrite", res(alice, "update", "", "pods", "status", "alice", "web"), false,
			`pods "web" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "alice"`},
		{"ErrRBACWrite", res(alice, "create", "rbac.authorization.k8s.io", "rolebindings", "", "alice", ""), false,
			`rolebindings.rbac.authorization.k8s.io is forbidden: User "alice" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "alice"`},
		{"ErrDanglingBinding", res(alice, "get", "", "pods", "", "carol", "x"), false,
			`pods "x" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "carol": RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found`},
		{"OK/access review", res(alice, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true,
			`RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`},
		{"OK/discovery", path(alice, "get", "/apis/rbac.authorization.k8s.io/v1"), true, ""},
		{"OK/openapi", path(alice, "get", "/openapi/v3"), true, ""},
		{"ErrPath", path(alice, "get", "/foo"), false, `forbidden: User "alice" cannot get path "/foo"`},
		{"OK/anonymous version", path(anon, "get", "/version"), true,
			`RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`},
		{"OK/anonymous healthz", path(anon, "get", "/healthz"), true, ""},
		{"ErrAnonymousDiscovery", path(anon, "get", "/api"), false, `forbidden: User "system:anonymous" cannot get path "/api"`},
		{"ErrAnonymousPods", res(anon, "list", "", "pods", "", "alice", ""), false,
			`pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "alice"`},
		{"OK/masters", res(root, "delete", "", "namespaces", "", "bob", "bob"), true, ""},
		{"OK/serviceaccount by role with resourceName", res(saBot, "get", "", "configmaps", "", "alice", "cfg"), true,
			`RBAC: allowed by RoleBinding "bot/alice" of Role "read-cfg" to ServiceAccount "bot/alice"`},
		{"ErrServiceAccountOtherName", res(saBot, "get", "", "configmaps", "", "alice", "other"), false,
			`configmaps "other" is forbidden: User "system:serviceaccount:alice:bot" cannot get resource "configmaps" in API group "" in the namespace "alice"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed, reason := c.authz.Authorize(tc.attrs)
			if allowed != tc.allow {
				t.Fatalf("allowed = %v (%s), want %v", allowed, reason, tc.allow)
			}
			switch {
			case allowed && tc.reason != "" && reason != tc.reason:
				t.Fatalf("reason %q, want %q", reason, tc.reason)
			case !allowed:
				if got := rbac.Forbidden(tc.attrs, reason).Error(); got != tc.reason {
					t.Fatalf("403 message\n got %s\nwant %s", got, tc.reason)
				}
			}
			// kubectl auth can-i asks the same question through an access review.
			spec := authorizationv1.SelfSubjectAccessReviewSpec{}
			if tc.attrs.IsResourceRequest {
				a := tc.attrs
				spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb,
					Group: a.APIGroup, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
			} else {
				spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: tc.attrs.Path, Verb: tc.attrs.Verb}
			}
			if st := rbac.AccessReview(c.authz, tc.attrs.User, spec); st.Allowed != tc.allow {
				t.Fatalf("access review says %v, enforcement %v", st.Allowed, tc.allow)
			}
		})
	}
}

// TestChangesArriveThroughTheWatch: bindings and roles written after the
// authorizer started take effect without any re-read per request.
func TestChangesArriveThroughTheWatch(t *testing.T) {
	c := newCluster(t, nil)
	listPods := res(alice, "list", "", "pods", "", "alice", "")
	if ok, _ := c.authz.Authorize(listPods); ok {
		t.Fatal("alice allowed before any binding")
	}
	storetest.Create(t, c.roleBindings, studentBinding("alice"))
	storetest.Eventually(t, "alice allowed after her RoleBinding is created", func() bool { ok, _ := c.authz.Authorize(listPods); return ok })

	// A new role aggregated into view reaches edit (and so alice) at once.
	widgets := res(alice, "list", "example.com", "widgets", "", "alice", "")
	if ok, _ := c.authz.Authorize(widgets); ok {
		t.Fatal("widgets allowed before the aggregated role exists")
	}
	storetest.Create(t, c.clusterRoles, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{rbac.AggregateToView: "true"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}},
	})
	storetest.Eventually(t, "widgets allowed through view→edit aggregation", func() bool { ok, _ := c.authz.Authorize(widgets); return ok })

	// A subject added to the binding gains its rights; roleRef is
	// immutable in kube, so subjects are what changes.
	b := studentBinding("alice")
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "bob"})
	storetest.Update(t, c.roleBindings, b)
	storetest.Eventually(t, "bob allowed after being added", func() bool {
		ok, _ := c.authz.Authorize(res(student("bob"), "list", "", "pods", "", "alice", ""))
		return ok
	})

	storetest.Delete(t, c.roleBindings, "alice", "edit")
	storetest.Eventually(t, "alice denied after her RoleBinding is deleted", func() bool { ok, _ := c.authz.Authorize(listPods); return !ok })
}

func TestRulesReviewListsBoundRules(t *testing.T) {
	c := newCluster(t, func(c *cluster) { storetest.Create(t, c.roleBindings, studentBinding("alice")) })
	st := c.authz.RulesReview(alice, "alice")
	if st.Incomplete || st.EvaluationError != "" {
		t.Fatalf("incomplete review: %+v", st)
	}
	has := func(verb, group, resource string) bool {
		for _, r := range st.ResourceRules {
			if contains(r.Verbs, verb) && contains(r.APIGroups, group) && contains(r.Resources, resource) {
				return true
			}
		}
		return false
	}
	for _, want := range [][3]string{{"create", "", "pods"}, {"list", "", "pods"}, {"create", "authorization.k8s.io", "selfsubjectrulesreviews"}} {
		if !has(want[0], want[1], want[2]) {
			t.Errorf("no rule lets alice %s %s.%s", want[0], want[2], want[1])
		}
	}
	if has("create", "rbac.authorization.k8s.io", "rolebindings") {
		t.Error("alice is listed as able to create rolebindings")
	}
	var urls []string
	for _, r := range st.NonResourceRules {
		urls = append(urls, r.NonResourceURLs...)
	}
	if !contains(urls, "/api/*") || !contains(urls, "/version") {
		t.Errorf("non-resource rules %v lack discovery", urls)
	}
	if other := c.authz.RulesReview(alice, "bob"); has2(other.ResourceRules, "pods") {
		t.Error("alice has pod rules in bob's namespace")
	}
}

func has2(rules []authorizationv1.ResourceRule, resource string) bool {
	for _, r := range rules {
		if contains(r.Resources, resource) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestEnsureBootstrapPolicyKeepsEdits(t *testing.T) {
	c := newCluster(t, nil)
	view, err := c.clusterRoles.Get(storetest.Ctx(t), storage.Key{Name: "edit"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(view.(*rbacv1.ClusterRole).Rules); n < 20 {
		t.Fatalf("stored edit role has %d rules; want its aggregated rules", n)
	}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}}}
	storetest.Update(t, c.clusterRoles, cr)
	if err := rbac.EnsureBootstrapPolicy(storetest.Ctx(t), c.clusterRoles, c.clusterRoleBindings); err != nil {
		t.Fatalf("second run: %v", err)
	}
	got, err := c.clusterRoles.Get(storetest.Ctx(t), storage.Key{Name: "system:discovery"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if rules := got.(*rbacv1.ClusterRole).Rules; len(rules) != 1 || len(rules[0].NonResourceURLs) != 1 {
		t.Fatalf("an edited role was overwritten: %+v", rules)
	}
}

func TestNotSyncedDeniesAllButMasters(t *testing.T) {
	client := storagetest.StartEtcd(t).Client()
	a := rbac.New(rbac.Sources{
		Roles: storetest.Store(t, client, storetest.Roles, nil), RoleBindings: storetest.Store(t, client, storetest.RoleBindings, nil),
		ClusterRoles: storetest.Store(t, client, storetest.ClusterRoles, nil), ClusterRoleBindings: storetest.Store(t, client, storetest.ClusterRoleBindings, nil),
	}, storetest.Quiet())
	if ok, reason := a.Authorize(path(alice, "get", "/version")); ok || reason != rbac.NotSyncedReason {
		t.Fatalf("before Start: %v %q", ok, reason)
	}
	if ok, _ := a.Authorize(path(root, "get", "/version")); !ok {
		t.Fatal("system:masters denied before Start")
	}
	if st := a.RulesReview(alice, "alice"); !st.Incomplete {
		t.Fatal("rules review before Start claims to be complete")
	}
}
