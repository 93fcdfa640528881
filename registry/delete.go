package registry

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/storage"
)

// What deleting an object means once finalizers and grace periods exist,
// as kube's registry.Store.Delete with its RESTGracefulDeleteStrategy:
//
//   - An object without finalizers and without a grace period goes at once.
//   - Otherwise it is only marked: metadata.deletionTimestamp is set (now
//     plus the grace period) and it stays, readable and watchable, until
//     its finalizers are removed and its grace period is over (a bound
//     pod's kubelet deletes it again with a grace period of 0).
//   - A propagation policy adds the garbage collector's finalizer: orphan
//     (dependents are let go first) or foregroundDeletion (dependents are
//     deleted first); background adds none.
//   - A namespace is only marked Terminating; the namespace controller
//     empties it and removes its finalizer, and it goes once none is left.

// DeleteOptions are the parts of metav1.DeleteOptions that shape a deletion.
type DeleteOptions struct {
	DryRun bool
	// GracePeriodSeconds overrides the object's own (a pod's
	// terminationGracePeriodSeconds); nil keeps it.
	GracePeriodSeconds *int64
	// PropagationPolicy is nil for background.
	PropagationPolicy *metav1.DeletionPropagation
	Preconditions     *storage.Preconditions
}

// Delete deletes or marks the object under k. It returns the object's
// last state and whether it is gone.
func (s *Store) Delete(ctx context.Context, k storage.Key, opts DeleteOptions) (runtime.Object, bool, error) {
	o, err := s.begin(ctx, "delete", "", k, opts.DryRun)
	if err != nil {
		return nil, false, err
	}
	obj, gone, err := s.delete(o, k, opts)
	return obj, gone, o.finish(err)
}

func (s *Store) delete(o *op, k storage.Key, opts DeleteOptions) (runtime.Object, bool, error) {
	if o.dryRun {
		obj, err := s.storage.Get(o.ctx, k, "")
		return obj, false, err
	}
	if o.on() {
		cur, err := s.storage.Get(o.ctx, k, "")
		if err != nil {
			return nil, false, err
		}
		if err := o.admitDelete(cur); err != nil {
			return nil, false, err
		}
	}
	var obj runtime.Object
	var gone bool
	var err error
	call := o.storing()
	if s.Resource.isNamespace() {
		obj, gone, err = s.terminateNamespace(o.ctx, k, opts.Preconditions)
	} else {
		obj, gone, err = s.deleteOrMark(o.ctx, k, opts)
	}
	call.done(rvOf(obj), err)
	return obj, gone, err
}

// DeleteCollection deletes every object the list options select, with
// opts for each (preconditions name one object, so a collection takes
// none), and returns them in their last state.
func (s *Store) DeleteCollection(ctx context.Context, list storage.ListOptions, opts DeleteOptions) ([]runtime.Object, error) {
	o, err := s.begin(ctx, "deletecollection", "", storage.Key{Namespace: list.Namespace}, opts.DryRun)
	if err != nil {
		return nil, err
	}
	deleted, err := s.deleteCollection(o, list, opts)
	return deleted, o.finish(err)
}

func (s *Store) deleteCollection(o *op, list storage.ListOptions, opts DeleteOptions) ([]runtime.Object, error) {
	opts.Preconditions = nil
	res, err := s.storage.List(o.ctx, list)
	if err != nil {
		return nil, err
	}
	var deleted []runtime.Object
	for _, obj := range res.Items {
		if !o.dryRun {
			if obj, _, err = s.deleteOrMark(o.ctx, keyOf(obj), opts); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
		}
		deleted = append(deleted, obj)
	}
	return deleted, nil
}

// deleteOrMark deletes the object under k, or marks it for deletion when
// a finalizer or a grace period holds it.
func (s *Store) deleteOrMark(ctx context.Context, k storage.Key, opts DeleteOptions) (runtime.Object, bool, error) {
	now := time.Now()
	marked, err := s.storage.GuaranteedUpdate(ctx, k, opts.Preconditions, func(cur runtime.Object) (runtime.Object, error) {
		next := cur.DeepCopyObject()
		m, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		grace := gracePeriod(next, opts.GracePeriodSeconds)
		finalizers := withPolicy(m.GetFinalizers(), opts.PropagationPolicy)
		if len(finalizers) == 0 && grace == 0 {
			return nil, errDeleteNow
		}
		m.SetFinalizers(finalizers)
		// A deletion already under way may only be brought forward.
		if old := m.GetDeletionGracePeriodSeconds(); m.GetDeletionTimestamp() == nil || old == nil || grace < *old {
			at := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
			m.SetDeletionTimestamp(&at)
			m.SetDeletionGracePeriodSeconds(&grace)
		}
		return next, nil
	})
	if errors.Is(err, errDeleteNow) {
		obj, err := s.storage.Delete(ctx, k, opts.Preconditions)
		return obj, err == nil, err
	}
	return marked, false, err
}

var errDeleteNow = errors.New("nothing holds the object back")

// terminateNamespace is a namespace's deletion as in kube-apiserver: the
// first delete only marks it Terminating (deletionTimestamp set, phase
// Terminating) and answers with it; the namespace controller then empties
// it and removes its "kubernetes" finalizer, and the namespace goes once
// no finalizer is left. A namespace without finalizers goes at once.
func (s *Store) terminateNamespace(ctx context.Context, k storage.Key, pre *storage.Preconditions) (runtime.Object, bool, error) {
	var finalized bool
	obj, err := s.storage.GuaranteedUpdate(ctx, k, pre, func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace).DeepCopy()
		finalized = len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0
		if ns.DeletionTimestamp == nil {
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			ns.DeletionTimestamp = &now
			ns.DeletionGracePeriodSeconds = new(int64)
		}
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns, nil
	})
	if err == nil && finalized {
		obj, err = s.storage.Delete(ctx, k, nil)
		return obj, err == nil, err
	}
	return obj, false, err
}

// Finished says whether an object marked for deletion may now go: no
// finalizer left (a namespace's spec.finalizers included) and its grace
// period given up.
func Finished(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	// A namespace is held by its spec's finalizers too.
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// finishDeletion completes the deletion of an object an update has just
// released: its last finalizer removed, its grace period over. Another
// change since is left to whoever made it.
func (s *Store) finishDeletion(ctx context.Context, updated runtime.Object) (runtime.Object, error) {
	if !Finished(updated) {
		return updated, nil
	}
	m, _ := meta.Accessor(updated)
	uid, rv := m.GetUID(), m.GetResourceVersion()
	gone, err := s.storage.Delete(ctx, storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()},
		&storage.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return updated, nil
	}
	return gone, err
}

// RemoveFinalizer takes name off the object under k (with uid), as an
// update by the caller, and so deletes the object if that was what held it.
func (s *Store) RemoveFinalizer(ctx context.Context, k storage.Key, uid types.UID, name string, fieldManager string) error {
	_, err := s.Update(ctx, k, UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		next := cur.DeepCopyObject()
		m, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		m.SetFinalizers(slices.DeleteFunc(m.GetFinalizers(), func(f string) bool { return f == name }))
		return next, nil
	}), UpdateOptions{FieldManager: fieldManager, Preconditions: &storage.Preconditions{UID: &uid}})
	return err
}

// gracePeriod is how long the object may take to stop. Only a pod that a
// node runs has one (kube's pod strategy): an unbound or finished pod has
// nothing to stop.
func gracePeriod(obj runtime.Object, requested *int64) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if requested != nil {
		grace = *requested
	}
	// A negative grace period is read as 1 second, as kube-apiserver does.
	if grace < 0 {
		grace = 1
	}
	return grace
}

// withPolicy is finalizers with the propagation policy's own.
func withPolicy(finalizers []string, policy *metav1.DeletionPropagation) []string {
	out := slices.Clone(finalizers)
	drop := func(f string) { out = slices.DeleteFunc(out, func(x string) bool { return x == f }) }
	add := func(f string) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if policy == nil {
		return out
	}
	switch *policy {
	case metav1.DeletePropagationOrphan:
		drop(metav1.FinalizerDeleteDependents)
		add(metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		drop(metav1.FinalizerOrphanDependents)
		add(metav1.FinalizerDeleteDependents)
	case metav1.DeletePropagationBackground:
		drop(metav1.FinalizerOrphanDependents)
		drop(metav1.FinalizerDeleteDependents)
	}
	return out
}
