package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// The matching below follows kube-apiserver's RBAC evaluation rules
// (pkg/apis/rbac/v1/evaluation_helpers.go and the authorizer's
// RuleAllows), which no library at v0.37 exports: component-helpers only
// has the policy comparator used for escalation checks.

// RuleAllows reports whether rule grants the request a describes.
func RuleAllows(a *pipeline.Attributes, rule *rbacv1.PolicyRule) bool {
	if !VerbMatches(rule, a.Verb) {
		return false
	}
	if !a.IsResourceRequest {
		return NonResourceURLMatches(rule, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	return APIGroupMatches(rule, a.APIGroup) &&
		ResourceMatches(rule, resource, a.Subresource) &&
		ResourceNameMatches(rule, a.Name)
}

// VerbMatches: the rule names the verb, or "*".
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches: the rule names the group ("" is the core group), or "*".
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches matches "resource/subresource" (combined) against the
// rule's resources: "*" matches everything, an exact name matches itself
// (so "pods" does not match "pods/status"), and "*/status" matches the
// status subresource of any resource.
func ResourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// ResourceNameMatches: a rule without resourceNames matches any name
// (including none, as in list and create); otherwise the name must be listed.
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

// NonResourceURLMatches: "*" matches every path, a URL matches itself,
// and a URL ending in "*" matches every path it prefixes ("/api/*"
// matches "/api/v1" but not "/api").
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

// appliesTo returns the first subject that names the user, as kube does:
// a User by name, a Group by membership, a ServiceAccount by its
// "system:serviceaccount:<ns>:<name>" user name, its namespace defaulting
// to the binding's (none for a ClusterRoleBinding).
func appliesTo(u *pipeline.User, subjects []rbacv1.Subject, bindingNamespace string) (int, bool) {
	for i := range subjects {
		s := &subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return i, true
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return i, true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && isServiceAccount(u.Name, ns, s.Name) {
				return i, true
			}
		}
	}
	return 0, false
}

// isServiceAccount compares without building the user name, since this
// runs for every binding on every request.
func isServiceAccount(user, ns, name string) bool {
	const prefix = "system:serviceaccount:"
	return len(user) == len(prefix)+len(ns)+1+len(name) &&
		strings.HasPrefix(user, prefix) &&
		user[len(prefix):len(prefix)+len(ns)] == ns &&
		user[len(prefix)+len(ns)] == ':' &&
		user[len(prefix)+len(ns)+1:] == name
}
