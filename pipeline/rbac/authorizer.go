// Package rbac authorizes requests with Kubernetes RBAC semantics over the
// Role, ClusterRole, RoleBinding and ClusterRoleBinding objects in etcd.
// The objects are kept in memory from watches, so a request never reads
// etcd; a change to a binding applies as soon as its watch event arrives.
package rbac

import (
	"context"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/informer"
)

// Source lists and watches one RBAC kind; *etcd3.Store is one.
type Source = informer.Source

// Sources are the stores of the four RBAC kinds.
type Sources struct {
	Roles, RoleBindings, ClusterRoles, ClusterRoleBindings Source
}

// Authorizer is kube-apiserver's RBAC authorizer, preceded (as there) by
// the rule that members of system:masters may do anything.
type Authorizer struct {
	ix        *index
	informers []*informer.Informer
	synced    chan struct{}
}

var _ pipeline.Authorizer = (*Authorizer)(nil)

// NotSyncedReason is the reason for every denial before the authorizer has
// read the RBAC objects once.
const NotSyncedReason = "RBAC: the authorizer has not read the RBAC objects yet"

// New returns an authorizer over src; Start feeds it.
func New(src Sources, log *slog.Logger) *Authorizer {
	ix := newIndex()
	a := &Authorizer{ix: ix, synced: make(chan struct{})}
	a.informers = []*informer.Informer{
		informer.New("clusterroles", src.ClusterRoles, ix.clusterRoleHandler(), log),
		informer.New("clusterrolebindings", src.ClusterRoleBindings, ix.clusterRoleBindingHandler(), log),
		informer.New("roles", src.Roles, ix.roleHandler(), log),
		informer.New("rolebindings", src.RoleBindings, ix.roleBindingHandler(), log),
	}
	return a
}

// Start lists and watches the four kinds, in the background, until ctx
// ends. WaitForSync tells when they have been read.
func (a *Authorizer) Start(ctx context.Context) {
	for _, inf := range a.informers {
		go inf.Run(ctx)
	}
	go func() {
		for _, inf := range a.informers {
			select {
			case <-inf.Synced():
			case <-ctx.Done():
				return
			}
		}
		close(a.synced)
	}()
}

// WaitForSync returns once every kind has been read, or with ctx's error
// if ctx ends first. A server waits for it before serving, as
// kube-apiserver waits for its informers.
func (a *Authorizer) WaitForSync(ctx context.Context) error {
	select {
	case <-a.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Synced is closed once Start has read every kind.
func (a *Authorizer) Synced() <-chan struct{} { return a.synced }

func (a *Authorizer) isSynced() bool {
	select {
	case <-a.synced:
		return true
	default:
		return false
	}
}

// Authorize decides a request as kube-apiserver does with
// --authorization-mode=RBAC: allowed if the user is in system:masters or
// any rule bound to the user (cluster-wide, or in the request's namespace)
// matches. An allowed reason names the binding, e.g. `RBAC: allowed by
// RoleBinding "edit/alice" of ClusterRole "edit" to User "alice"`. A
// denial's reason is empty unless a binding the user is in refers to a
// missing role: `RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`.
func (a *Authorizer) Authorize(attrs *pipeline.Attributes) (allowed bool, reason string) {
	if attrs.User.InGroup(pipeline.SystemPrivilegedGroup) {
		return true, ""
	}
	if !a.isSynced() {
		return false, NotSyncedReason
	}
	var errs []error
	var by source
	found := a.visit(&attrs.User, attrs.Namespace, func(src source, rules []rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		for i := range rules {
			if RuleAllows(attrs, &rules[i]) {
				by = src
				return false
			}
		}
		return true
	})
	if found {
		return true, "RBAC: allowed by " + by.String()
	}
	if len(errs) > 0 {
		return false, "RBAC: " + utilerrors.NewAggregate(errs).Error()
	}
	return false, ""
}

// RulesFor lists every rule bound to the user in namespace (cluster-wide
// bindings included), as kube's rule resolver does for
// SelfSubjectRulesReview; the error names bindings to missing roles.
func (a *Authorizer) RulesFor(u pipeline.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	a.visit(&u, namespace, func(_ source, rs []rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		}
		rules = append(rules, rs...)
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// visit calls fn with the rules of each binding that applies to u:
// cluster role bindings first, then the role bindings of namespace. It
// stops, returning true, when fn returns false.
func (a *Authorizer) visit(u *pipeline.User, namespace string, fn func(source, []rbacv1.PolicyRule, error) bool) bool {
	ix := a.ix
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, b := range ix.clusterBindings {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := ix.roleRules(b.RoleRef, "")
		if !fn(source{crb: b, subject: i}, rules, err) {
			return true
		}
	}
	if namespace == "" {
		return false
	}
	for _, b := range ix.bindingsByNS[namespace] {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := ix.roleRules(b.RoleRef, namespace)
		if !fn(source{rb: b, subject: i}, rules, err) {
			return true
		}
	}
	return false
}

// Forbidden is kube's 403 for a request the authorizer refused; see
// pipeline.Forbidden, which it is.
func Forbidden(attrs *pipeline.Attributes, reason string) error {
	return pipeline.Forbidden(attrs, reason)
}
