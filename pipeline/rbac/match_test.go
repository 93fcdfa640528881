package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubelab/kubelab/pipeline"
)

func res(verb, group, resource, sub, ns, name string) *pipeline.Attributes {
	return &pipeline.Attributes{User: pipeline.User{Name: "u"}, Verb: verb, IsResourceRequest: true,
		APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func path(verb, p string) *pipeline.Attributes {
	return &pipeline.Attributes{User: pipeline.User{Name: "u"}, Verb: verb, Path: p}
}

// TestRuleAllows mirrors kube's RBAC matching rules, case by case.
func TestRuleAllows(t *testing.T) {
	pods := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, tc := range []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs *pipeline.Attributes
		want  bool
	}{
		{"OK/exact", pods, res("get", "", "pods", "", "a", "x"), true},
		{"OK/list has no name", pods, res("list", "", "pods", "", "a", ""), true},
		{"ErrVerb", pods, res("delete", "", "pods", "", "a", "x"), false},
		{"ErrGroup", pods, res("get", "apps", "pods", "", "a", "x"), false},
		{"ErrResource", pods, res("get", "", "secrets", "", "a", "x"), false},
		{"ErrResourceDoesNotCoverSubresource", pods, res("get", "", "pods", "status", "a", "x"), false},
		{"OK/subresource named", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
			res("get", "", "pods", "status", "a", "x"), true},
		{"ErrSubresourceDoesNotCoverResource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
			res("get", "", "pods", "", "a", "x"), false},
		{"OK/star-slash subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/status"}},
			res("get", "", "namespaces", "status", "", "x"), true},
		{"ErrStarSlashOtherSubresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/status"}},
			res("get", "", "pods", "log", "a", "x"), false},
		{"ErrStarSlashNeedsSubresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/status"}},
			res("get", "", "pods", "", "a", "x"), false},
		{"OK/all wildcards", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			res("deletecollection", "rbac.authorization.k8s.io", "roles", "", "a", ""), true},
		{"OK/star resource covers subresource", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			res("update", "", "pods", "status", "a", "x"), true},
		{"OK/resourceName listed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}},
			res("get", "", "configmaps", "", "a", "cfg"), true},
		{"ErrResourceNameNotListed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}},
			res("get", "", "configmaps", "", "a", "other"), false},
		{"ErrResourceNamesNeverCoverList", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}},
			res("list", "", "configmaps", "", "a", ""), false},
		{"ErrResourceRuleForPath", pods, path("get", "/api"), false},
		{"OK/url exact", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}, path("get", "/version"), true},
		{"OK/url prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}, path("get", "/apis/rbac.authorization.k8s.io/v1"), true},
		{"ErrUrlPrefixNeedsMore", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}, path("get", "/apis"), false},
		{"OK/url star", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, path("post", "/anything"), true},
		{"ErrUrlVerb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, path("post", "/healthz"), false},
		{"ErrUrlRuleForResource", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, res("get", "", "pods", "", "a", "x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Fatalf("RuleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAppliesTo(t *testing.T) {
	alice := pipeline.User{Name: "alice", Groups: []string{"students", pipeline.AllAuthenticated}}
	sa := pipeline.User{Name: "system:serviceaccount:alice:default", Groups: []string{pipeline.AllAuthenticated}}
	for _, tc := range []struct {
		name     string
		u        pipeline.User
		subjects []rbacv1.Subject
		ns       string
		want     bool
	}{
		{"OK/user", alice, []rbacv1.Subject{{Kind: "User", Name: "alice"}}, "alice", true},
		{"ErrOtherUser", alice, []rbacv1.Subject{{Kind: "User", Name: "bob"}}, "alice", false},
		{"OK/group", alice, []rbacv1.Subject{{Kind: "User", Name: "bob"}, {Kind: "Group", Name: "students"}}, "", true},
		{"ErrUserNameIsNotAGroup", alice, []rbacv1.Subject{{Kind: "Group", Name: "alice"}}, "", false},
		{"OK/serviceaccount defaults to binding namespace", sa, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}, "alice", true},
		{"OK/serviceaccount with namespace", sa, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "alice"}}, "", true},
		{"ErrServiceAccountOtherNamespace", sa, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}, "bob", false},
		{"ErrServiceAccountNoNamespace", sa, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}, "", false},
		{"ErrServiceAccountPrefixOnly", pipeline.User{Name: "system:serviceaccount:alice:defaultx"}, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "alice"}}, "", false},
		{"ErrUnknownKind", alice, []rbacv1.Subject{{Kind: "Robot", Name: "alice"}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := appliesTo(&tc.u, tc.subjects, tc.ns); got != tc.want {
				t.Fatalf("appliesTo = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAggregationFollowsKube(t *testing.T) {
	roles := BootstrapClusterRoles()
	agg := AggregatedRules(roles)
	if len(agg) != 3 {
		t.Fatalf("aggregated roles: %d, want admin, edit and view", len(agg))
	}
	view, edit, admin := agg["view"], agg["edit"], agg["admin"]
	if len(view) != len(aggregateToViewRules()) {
		t.Fatalf("view has %d rules, want system:aggregate-to-view's %d", len(view), len(aggregateToViewRules()))
	}
	// edit = system:aggregate-to-edit, then view (role-name order: "system:..." < "view").
	if len(edit) != len(aggregateToEditRules())+len(view) {
		t.Fatalf("edit has %d rules", len(edit))
	}
	// admin = edit's rules, then system:aggregate-to-admin's ("edit" < "system:...").
	if len(admin) != len(edit)+2 || !ruleEqual(&admin[0], &edit[0]) {
		t.Fatalf("admin has %d rules, want %d", len(admin), len(edit)+2)
	}
	allows := func(rules []rbacv1.PolicyRule, a *pipeline.Attributes) bool {
		for i := range rules {
			if RuleAllows(a, &rules[i]) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		attrs *pipeline.Attributes
		want  bool
	}{
		{"OK/view lists pods", view, res("list", "", "pods", "", "a", ""), true},
		{"ErrViewCreatesPods", view, res("create", "", "pods", "", "a", ""), false},
		{"ErrViewReadsSecrets", view, res("get", "", "secrets", "", "a", "s"), false},
		{"OK/edit creates pods", edit, res("create", "", "pods", "", "a", ""), true},
		{"OK/edit reads pods through view", edit, res("watch", "", "pods", "", "a", ""), true},
		{"OK/edit reads secrets", edit, res("get", "", "secrets", "", "a", "s"), true},
		{"ErrEditWritesRoleBindings", edit, res("create", "rbac.authorization.k8s.io", "rolebindings", "", "a", ""), false},
		{"ErrEditUpdatesPodStatus", edit, res("update", "", "pods", "status", "a", "x"), false},
		{"OK/admin writes RoleBindings", admin, res("create", "rbac.authorization.k8s.io", "rolebindings", "", "a", ""), true},
		{"OK/admin creates pods through edit", admin, res("create", "", "pods", "", "a", ""), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allows(tc.rules, tc.attrs); got != tc.want {
				t.Fatalf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAggregationCycleTerminates(t *testing.T) {
	a := clusterRole("a", map[string]string{"to-b": "true"}, "to-a", rule(read, "", "pods"))
	b := clusterRole("b", map[string]string{"to-a": "true"}, "to-b", rule(read, "", "secrets"))
	c := clusterRole("c", map[string]string{"to-a": "true"}, "", rule(read, "", "configmaps"))
	agg := AggregatedRules([]*rbacv1.ClusterRole{a, b, c})
	if len(agg["a"]) == 0 || len(agg["b"]) == 0 {
		t.Fatalf("cycle lost rules: %+v", agg)
	}
}
