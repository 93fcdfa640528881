package admission

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// NamespaceLifecycle is kube's plugin of that name: nothing may be created
// in a namespace that does not exist (404 `namespaces "x" not found`) or
// is Terminating (403), and the namespaces the cluster depends on cannot
// be deleted. Like kube's, it runs among the mutating plugins (first, so
// nothing else works on a doomed request) but never changes the object.
type NamespaceLifecycle struct {
	Namespaces NamespaceGetter
	// Immortal namespaces may not be deleted.
	Immortal []string
}

var (
	_ MutatingPlugin = (*NamespaceLifecycle)(nil)
	_ ReadOnly       = (*NamespaceLifecycle)(nil)
)

// NewNamespaceLifecycle protects kube's immortal namespaces: default,
// kube-system and kube-public.
func NewNamespaceLifecycle(ns NamespaceGetter) *NamespaceLifecycle {
	return &NamespaceLifecycle{Namespaces: ns, Immortal: []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}}
}

// Name implements MutatingPlugin.
func (*NamespaceLifecycle) Name() string { return "NamespaceLifecycle" }

// ReadOnly implements ReadOnly: the plugin only ever refuses.
func (*NamespaceLifecycle) ReadOnly() {}

// accessReviews may be asked about any namespace, existing or not:
// refusing them would tell who may look which namespaces exist.
var accessReviews = map[string]bool{"localsubjectaccessreviews": true}

// Admit implements MutatingPlugin.
func (l *NamespaceLifecycle) Admit(ctx context.Context, a *pipeline.Attributes) error {
	isNamespace := a.APIGroup == "" && a.Resource == "namespaces"
	if isNamespace {
		if a.Operation == pipeline.Delete {
			if slices.Contains(l.Immortal, a.Name) {
				return apierrors.NewForbidden(a.GroupResource(), a.Name, fmt.Errorf("this namespace may not be deleted"))
			}
			if f, ok := l.Namespaces.(interface{ ForceLiveLookup(string) }); ok {
				f.ForceLiveLookup(a.Name)
			}
		}
		return nil
	}
	if a.Namespace == "" || a.Operation == pipeline.Delete || a.Operation == pipeline.Update ||
		(a.APIGroup == "authorization.k8s.io" && accessReviews[a.Resource]) {
		return nil
	}
	ns, err := l.Namespaces.GetNamespace(ctx, a.Namespace)
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	if a.Operation != pipeline.Create || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	forbidden := NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	if st, ok := forbidden.(*apierrors.StatusError); ok {
		st.ErrStatus.Details.Causes = append(st.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
	}
	return forbidden
}
