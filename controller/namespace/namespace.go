// Package namespace is the namespace controller: it finishes the deletion
// of a Terminating namespace as kube-controller-manager's does. It deletes
// everything the namespace holds, reports progress in the namespace's
// status conditions, removes the "kubernetes" finalizer, and then deletes
// the namespace itself.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// Controller empties and removes Terminating namespaces.
type Controller struct {
	namespaces *registry.Store
	// contents lists the stores of every namespaced resource at the time
	// of the call (custom resources come and go).
	contents func() []*registry.Store
	loop     *controller.Loop
	feed     interface{ Run(context.Context) }
	now      func() time.Time
}

// New watches namespaces and empties, through the stores contents
// returns, each one that is being deleted.
func New(namespaces *registry.Store, contents func() []*registry.Store, log *slog.Logger) *Controller {
	c := &Controller{namespaces: namespaces, contents: contents, now: time.Now}
	c.loop = controller.New("namespace", c.sync, log)
	c.feed = controller.Feed("namespaces", namespaces, terminating, c.loop)
	return c
}

// Run works until ctx ends, and returns once its feed has stopped too:
// whoever runs it stops the stores it reads after it returns.
func (c *Controller) Run(ctx context.Context) {
	var feeding sync.WaitGroup
	feeding.Go(func() { c.feed.Run(ctx) })
	c.loop.Run(ctx)
	feeding.Wait()
}

func terminating(obj runtime.Object) (string, bool) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return "", false
	}
	return ns.Name, true
}

func (c *Controller) sync(ctx context.Context, name string) error {
	key := storage.Key{Name: name}
	obj, err := c.namespaces.Get(ctx, key, "")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp == nil {
		return nil
	}
	left, deleteErr := c.empty(ctx, name)
	if err := c.report(ctx, ns, left, deleteErr); err != nil {
		return err
	}
	if deleteErr != nil {
		return deleteErr
	}
	if left.remaining > 0 {
		// Objects held by a finalizer or a grace period, or created by a
		// client that raced the Terminating phase: go round again.
		return fmt.Errorf("namespace %s still has %d objects", name, left.remaining)
	}
	// Through /finalize, as kube's controller removes its finalizer.
	finalized, err := c.namespaces.Update(ctx, key, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace).DeepCopy()
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		return ns, nil
	}), registry.UpdateOptions{Subresource: "finalize", FieldManager: controller.FieldManager, Preconditions: &storage.Preconditions{UID: &ns.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a namespace of the same name made anew
	}
	if err != nil {
		return err
	}
	if n := finalized.(*corev1.Namespace); len(n.Spec.Finalizers) > 0 || len(n.Finalizers) > 0 {
		return nil // other finalizers are someone else's to remove
	}
	_, _, err = c.namespaces.Delete(ctx, key, registry.DeleteOptions{Preconditions: &storage.Preconditions{UID: &ns.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// contents is what emptying a namespace left behind.
type contents struct {
	remaining int
	// finalizers counts the objects each finalizer still holds.
	finalizers map[string]int
}

// empty deletes what the namespace holds, as a client's DELETE would (a
// running pod gets its grace period, an object with finalizers is only
// marked), and counts what is left after.
func (c *Controller) empty(ctx context.Context, ns string) (contents, error) {
	var errs []error
	left := contents{finalizers: map[string]int{}}
	for _, store := range c.contents() {
		list, err := store.List(ctx, storage.ListOptions{Namespace: ns})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range list.Items {
			m, err := meta.Accessor(obj)
			if err != nil {
				continue
			}
			uid := m.GetUID()
			_, _, err = store.Delete(ctx, storage.Key{Namespace: ns, Name: m.GetName()},
				registry.DeleteOptions{Preconditions: &storage.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, err)
			}
		}
		after, err := store.List(ctx, storage.ListOptions{Namespace: ns})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		left.remaining += len(after.Items)
		for _, obj := range after.Items {
			if m, err := meta.Accessor(obj); err == nil {
				for _, f := range m.GetFinalizers() {
					left.finalizers[f]++
				}
			}
		}
	}
	return left, errors.Join(errs...)
}

// report writes the deletion's progress into the namespace's conditions,
// with the types and reasons kube's namespace controller uses.
func (c *Controller) report(ctx context.Context, ns *corev1.Namespace, left contents, deleteErr error) error {
	now := metav1.NewTime(c.now().Truncate(time.Second))
	remaining := left.remaining
	contentFailure := condition(corev1.NamespaceDeletionContentFailure, deleteErr != nil, "ContentDeletionFailed", "ContentDeleted", errString(deleteErr), "All content successfully deleted, may be waiting on finalization", now)
	contentRemaining := condition(corev1.NamespaceContentRemaining, remaining > 0, "SomeResourcesRemain", "ContentRemoved", fmt.Sprintf("Some resources are remaining: %d objects", remaining), "All content successfully removed", now)
	_, err := c.namespaces.Update(ctx, storage.Key{Name: ns.Name}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		n := cur.(*corev1.Namespace).DeepCopy()
		for _, cond := range []corev1.NamespaceCondition{
			condition(corev1.NamespaceDeletionDiscoveryFailure, false, "", "ResourcesDiscovered", "", "All resources successfully discovered", now),
			condition(corev1.NamespaceDeletionGVParsingFailure, false, "", "ParsedGroupVersions", "", "All legacy kube types successfully parsed", now),
			contentFailure, contentRemaining,
			condition(corev1.NamespaceFinalizersRemaining, len(left.finalizers) > 0, "SomeFinalizersRemain", "ContentHasNoFinalizers", finalizersMessage(left.finalizers), "All content-preserving finalizers finished", now),
		} {
			setCondition(&n.Status, cond)
		}
		return n, nil
	}), registry.UpdateOptions{Subresource: "status", FieldManager: controller.FieldManager, Preconditions: &storage.Preconditions{UID: &ns.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func condition(t corev1.NamespaceConditionType, failed bool, badReason, goodReason, badMsg, goodMsg string, now metav1.Time) corev1.NamespaceCondition {
	if failed {
		return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: badReason, Message: badMsg, LastTransitionTime: now}
	}
	return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: goodReason, Message: goodMsg, LastTransitionTime: now}
}

// setCondition replaces the condition of the same type, keeping its
// transition time when its status did not change.
func setCondition(st *corev1.NamespaceStatus, cond corev1.NamespaceCondition) {
	for i, old := range st.Conditions {
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		st.Conditions[i] = cond
		return
	}
	st.Conditions = append(st.Conditions, cond)
}

// finalizersMessage is kube's wording for what holds the namespace.
func finalizersMessage(finalizers map[string]int) string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(finalizers)) {
		parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, finalizers[f]))
	}
	return "Some content in the namespace has finalizers remaining: " + strings.Join(parts, ", ")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
