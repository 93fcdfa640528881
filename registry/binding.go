package registry

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/storage"
)

// Bind assigns the pod under k (with uid) to node, as a create of kube's
// pods/binding does: its only effect is the pod's spec.nodeName and its
// PodScheduled condition, a change the pod's own update strategy forbids.
func (s *Store) Bind(ctx context.Context, k storage.Key, uid types.UID, node string) (runtime.Object, error) {
	if s.Resource.GroupResource() != corev1.Resource("pods") {
		return nil, apierrors.NewMethodNotSupported(s.Resource.GroupResource(), "create binding")
	}
	o, err := s.begin(ctx, "create", "binding", k, false)
	if err != nil {
		return nil, err
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	call := o.storing()
	bound, err := s.storage.GuaranteedUpdate(ctx, k, &storage.Preconditions{UID: &uid}, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod).DeepCopy()
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(s.Resource.GroupResource(), k.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", k.Name))
		}
		if pod.Spec.NodeName != "" && pod.Spec.NodeName != node {
			return nil, apierrors.NewConflict(s.Resource.GroupResource(), k.Name, fmt.Errorf("pod %s is already assigned to node %q", k.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = node
		scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}
		for i, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				if c.Status != corev1.ConditionTrue {
					pod.Status.Conditions[i] = scheduled
				}
				return pod, nil
			}
		}
		pod.Status.Conditions = append(pod.Status.Conditions, scheduled)
		return pod, nil
	})
	call.done(rvOf(bound), err)
	return bound, o.finish(err)
}
