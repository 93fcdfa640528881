package rbac

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline/informer"
)

// index is the authorizer's in-memory view of the four RBAC kinds, kept
// current by informers. Stored objects are shared with the watch cache and
// never modified.
type index struct {
	mu           sync.RWMutex
	roles        map[string]map[string]*rbacv1.Role        // namespace → name
	roleBindings map[string]map[string]*rbacv1.RoleBinding // namespace → name
	// bindingsByNS is roleBindings as name-sorted slices, so evaluation is
	// cheap and its "allowed by" reason deterministic.
	bindingsByNS        map[string][]*rbacv1.RoleBinding
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
	clusterBindings     []*rbacv1.ClusterRoleBinding // name-sorted
	// clusterRules are each ClusterRole's effective rules: its own, or for
	// an aggregated role the union of the roles its selectors pick.
	clusterRules map[string][]rbacv1.PolicyRule
}

func newIndex() *index {
	return &index{
		roles: map[string]map[string]*rbacv1.Role{}, roleBindings: map[string]map[string]*rbacv1.RoleBinding{},
		bindingsByNS: map[string][]*rbacv1.RoleBinding{}, clusterRoles: map[string]*rbacv1.ClusterRole{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{}, clusterRules: map[string][]rbacv1.PolicyRule{},
	}
}

// roleRules returns the rules a binding's roleRef grants, or kube's error
// for a reference to a role that does not exist.
func (ix *index) roleRules(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		if r, ok := ix.roles[bindingNamespace][ref.Name]; ok {
			return r.Rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("role"), ref.Name)
	case "ClusterRole":
		if rules, ok := ix.clusterRules[ref.Name]; ok {
			return rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), ref.Name)
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// handler adapts one RBAC kind to informer.Handler.
type handler struct {
	ix      *index
	replace func(objs []runtime.Object)
	upsert  func(obj runtime.Object)
	remove  func(obj runtime.Object)
}

var _ informer.Handler = handler{}

// Replace implements informer.Handler.
func (h handler) Replace(objs []runtime.Object) {
	h.ix.mu.Lock()
	defer h.ix.mu.Unlock()
	h.replace(objs)
}

// Upsert implements informer.Handler.
func (h handler) Upsert(obj runtime.Object) {
	h.ix.mu.Lock()
	defer h.ix.mu.Unlock()
	h.upsert(obj)
}

// Remove implements informer.Handler.
func (h handler) Remove(obj runtime.Object) {
	h.ix.mu.Lock()
	defer h.ix.mu.Unlock()
	h.remove(obj)
}

// The handlers below run with ix.mu held for writing.

func (ix *index) roleHandler() handler {
	return handler{ix: ix,
		replace: func(objs []runtime.Object) {
			ix.roles = map[string]map[string]*rbacv1.Role{}
			for _, o := range objs {
				ix.putRole(o.(*rbacv1.Role))
			}
		},
		upsert: func(o runtime.Object) { ix.putRole(o.(*rbacv1.Role)) },
		remove: func(o runtime.Object) {
			r := o.(*rbacv1.Role)
			delete(ix.roles[r.Namespace], r.Name)
		},
	}
}

func (ix *index) putRole(r *rbacv1.Role) {
	if ix.roles[r.Namespace] == nil {
		ix.roles[r.Namespace] = map[string]*rbacv1.Role{}
	}
	ix.roles[r.Namespace][r.Name] = r
}

func (ix *index) roleBindingHandler() handler {
	return handler{ix: ix,
		replace: func(objs []runtime.Object) {
			ix.roleBindings = map[string]map[string]*rbacv1.RoleBinding{}
			for _, o := range objs {
				b := o.(*rbacv1.RoleBinding)
				ix.bindingsIn(b.Namespace)[b.Name] = b
			}
			ix.bindingsByNS = map[string][]*rbacv1.RoleBinding{}
			for ns := range ix.roleBindings {
				ix.sortBindings(ns)
			}
		},
		upsert: func(o runtime.Object) {
			b := o.(*rbacv1.RoleBinding)
			ix.bindingsIn(b.Namespace)[b.Name] = b
			ix.sortBindings(b.Namespace)
		},
		remove: func(o runtime.Object) {
			b := o.(*rbacv1.RoleBinding)
			delete(ix.roleBindings[b.Namespace], b.Name)
			ix.sortBindings(b.Namespace)
		},
	}
}

func (ix *index) bindingsIn(ns string) map[string]*rbacv1.RoleBinding {
	if ix.roleBindings[ns] == nil {
		ix.roleBindings[ns] = map[string]*rbacv1.RoleBinding{}
	}
	return ix.roleBindings[ns]
}

// sortBindings rebuilds one namespace's slice; the map and slice of a
// namespace left without bindings are dropped, so deleted students'
// namespaces cost nothing.
func (ix *index) sortBindings(ns string) {
	m := ix.roleBindings[ns]
	if len(m) == 0 {
		delete(ix.roleBindings, ns)
		delete(ix.bindingsByNS, ns)
		return
	}
	list := make([]*rbacv1.RoleBinding, 0, len(m))
	for _, b := range m {
		list = append(list, b)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	ix.bindingsByNS[ns] = list
}

func (ix *index) clusterRoleHandler() handler {
	return handler{ix: ix,
		replace: func(objs []runtime.Object) {
			ix.clusterRoles = map[string]*rbacv1.ClusterRole{}
			for _, o := range objs {
				r := o.(*rbacv1.ClusterRole)
				ix.clusterRoles[r.Name] = r
			}
			ix.clusterRules = aggregate(ix.clusterRoles)
		},
		upsert: func(o runtime.Object) {
			r := o.(*rbacv1.ClusterRole)
			ix.clusterRoles[r.Name] = r
			ix.clusterRules = aggregate(ix.clusterRoles)
		},
		remove: func(o runtime.Object) {
			delete(ix.clusterRoles, o.(*rbacv1.ClusterRole).Name)
			ix.clusterRules = aggregate(ix.clusterRoles)
		},
	}
}

func (ix *index) clusterRoleBindingHandler() handler {
	sortAll := func() {
		ix.clusterBindings = ix.clusterBindings[:0:0]
		for _, b := range ix.clusterRoleBindings {
			ix.clusterBindings = append(ix.clusterBindings, b)
		}
		sort.Slice(ix.clusterBindings, func(i, j int) bool { return ix.clusterBindings[i].Name < ix.clusterBindings[j].Name })
	}
	return handler{ix: ix,
		replace: func(objs []runtime.Object) {
			ix.clusterRoleBindings = map[string]*rbacv1.ClusterRoleBinding{}
			for _, o := range objs {
				b := o.(*rbacv1.ClusterRoleBinding)
				ix.clusterRoleBindings[b.Name] = b
			}
			sortAll()
		},
		upsert: func(o runtime.Object) {
			b := o.(*rbacv1.ClusterRoleBinding)
			ix.clusterRoleBindings[b.Name] = b
			sortAll()
		},
		remove: func(o runtime.Object) {
			delete(ix.clusterRoleBindings, o.(*rbacv1.ClusterRoleBinding).Name)
			sortAll()
		},
	}
}

// aggregate computes every ClusterRole's effective rules. An aggregated
// role's rules are the union, in role-name order and without duplicates,
// of the rules of the other roles its selectors match, as kube's
// clusterrole-aggregation controller writes them; a matched role that is
// itself aggregated contributes its own aggregated rules. Cluster roles
// are few and change rarely, so it recomputes them all.
func aggregate(roles map[string]*rbacv1.ClusterRole) map[string][]rbacv1.PolicyRule {
	out := make(map[string][]rbacv1.PolicyRule, len(roles))
	visiting := map[string]bool{}
	var resolve func(name string) []rbacv1.PolicyRule
	resolve = func(name string) []rbacv1.PolicyRule {
		if rules, ok := out[name]; ok {
			return rules
		}
		r := roles[name]
		if r.AggregationRule == nil || visiting[name] {
			// A cycle of aggregated roles falls back to the stored rules.
			return r.Rules
		}
		visiting[name] = true
		var rules []rbacv1.PolicyRule
		for _, m := range matchingRoles(roles, r) {
			for _, rule := range resolve(m) {
				if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return ruleEqual(&x, &rule) }) {
					rules = append(rules, rule)
				}
			}
		}
		delete(visiting, name)
		out[name] = rules
		return rules
	}
	for name := range roles {
		out[name] = resolve(name)
	}
	return out
}

// matchingRoles names, sorted, the roles (other than r) any of r's
// selectors match; an invalid selector matches nothing, as in kube.
func matchingRoles(roles map[string]*rbacv1.ClusterRole, r *rbacv1.ClusterRole) []string {
	var names []string
	for _, sel := range r.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil || s.Empty() {
			continue
		}
		for name, other := range roles {
			if name != r.Name && s.Matches(labels.Set(other.Labels)) && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

func ruleEqual(a, b *rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// AggregatedRules computes the rules of every aggregated ClusterRole among
// roles, as the aggregation controller would store them. The returned map
// has an entry only for roles with an aggregationRule.
func AggregatedRules(roles []*rbacv1.ClusterRole) map[string][]rbacv1.PolicyRule {
	byName := make(map[string]*rbacv1.ClusterRole, len(roles))
	for _, r := range roles {
		byName[r.Name] = r
	}
	all := aggregate(byName)
	out := map[string][]rbacv1.PolicyRule{}
	for _, r := range roles {
		if r.AggregationRule != nil {
			out[r.Name] = all[r.Name]
		}
	}
	return out
}

// describeSubject is kube's wording of the subject a binding matched.
func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// source is the binding (and subject in it) that granted a rule.
type source struct {
	crb     *rbacv1.ClusterRoleBinding
	rb      *rbacv1.RoleBinding
	subject int
}

// String is kube's "allowed by" description, e.g. `RoleBinding
// "edit/alice" of ClusterRole "edit" to User "alice"`.
func (s source) String() string {
	var b strings.Builder
	if s.crb != nil {
		fmt.Fprintf(&b, "ClusterRoleBinding %q of %s %q to %s", s.crb.Name, s.crb.RoleRef.Kind, s.crb.RoleRef.Name,
			describeSubject(&s.crb.Subjects[s.subject], ""))
	} else {
		fmt.Fprintf(&b, "RoleBinding %q of %s %q to %s", s.rb.Name+"/"+s.rb.Namespace, s.rb.RoleRef.Kind, s.rb.RoleRef.Name,
			describeSubject(&s.rb.Subjects[s.subject], s.rb.Namespace))
	}
	return b.String()
}
