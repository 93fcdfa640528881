// Package deletion is what deleting an object means once finalizers and
// grace periods exist, shared by the API's DELETE and by the controllers
// that delete (the garbage collector, the simulated kubelet):
//
//   - An object without finalizers and without a grace period goes at once.
//   - Otherwise it is only marked: metadata.deletionTimestamp is set (now
//     plus the grace period) and it stays, readable and watchable, until
//     its finalizers are removed and its grace period is over (a bound
//     pod's kubelet deletes it again with a grace period of 0).
//   - A propagation policy adds the garbage collector's finalizer: orphan
//     (dependents are let go first) or foregroundDeletion (dependents are
//     deleted first); background adds none.
package deletion

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// Options are the parts of metav1.DeleteOptions that shape a deletion.
type Options struct {
	// GracePeriodSeconds overrides the object's own (a pod's
	// terminationGracePeriodSeconds); nil keeps it.
	GracePeriodSeconds *int64
	// Policy is the propagation policy; nil is background.
	Policy        *metav1.DeletionPropagation
	Preconditions *storage.Preconditions
}

// Delete deletes or marks the object under k. It returns the object's last
// state and whether it is gone.
func Delete(ctx context.Context, s *etcd3.Store, k storage.Key, opts Options) (runtime.Object, bool, error) {
	now := time.Now()
	marked, err := s.GuaranteedUpdate(ctx, k, opts.Preconditions, func(cur runtime.Object) (runtime.Object, error) {
		next := cur.DeepCopyObject()
		m, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		grace := gracePeriod(next, opts.GracePeriodSeconds)
		finalizers := withPolicy(m.GetFinalizers(), opts.Policy)
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
		obj, err := s.Delete(ctx, k, opts.Preconditions)
		return obj, err == nil, err
	}
	return marked, false, err
}

var errDeleteNow = errors.New("nothing holds the object back")

// Finished says whether an object marked for deletion may now go: no
// finalizer left and its grace period given up.
func Finished(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// DeleteIfFinished removes obj, as stored at its resourceVersion, if
// Finished says it may go: the last step after a finalizer's removal.
func DeleteIfFinished(ctx context.Context, s *etcd3.Store, obj runtime.Object) (runtime.Object, bool, error) {
	if !Finished(obj) {
		return obj, false, nil
	}
	m, _ := meta.Accessor(obj)
	uid, rv := m.GetUID(), m.GetResourceVersion()
	gone, err := s.Delete(ctx, storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()},
		&storage.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil {
		return nil, false, err
	}
	return gone, true, nil
}

// RemoveFinalizer takes name off the object under k (with uid) and deletes
// the object if that was what held it.
func RemoveFinalizer(ctx context.Context, s *etcd3.Store, k storage.Key, uid, name string) error {
	u := types.UID(uid)
	updated, err := s.GuaranteedUpdate(ctx, k, &storage.Preconditions{UID: &u}, func(cur runtime.Object) (runtime.Object, error) {
		next := cur.DeepCopyObject()
		m, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		m.SetFinalizers(slices.DeleteFunc(m.GetFinalizers(), func(f string) bool { return f == name }))
		return next, nil
	})
	if err != nil {
		return err
	}
	_, _, err = DeleteIfFinished(ctx, s, updated)
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
