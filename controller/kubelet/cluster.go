package kubelet

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/controller"
)

// Cluster is what the simulated node reads and writes: the calls a
// kubelet and a scheduler make. OnRegistry makes them on kubelab's own
// core, OnClient through client-go (the kube core). Each write names the
// node's field manager; each change of a pod checks its UID, and answers
// NotFound or Conflict if the pod is gone or is another of that name.
type Cluster interface {
	// FeedPods queues on loop the key of every pod it lists, adds,
	// changes or removes, keyed by keyOf, until ctx ends.
	FeedPods(ctx context.Context, keyOf controller.KeyFunc, loop *controller.Loop)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// Bind binds the pod to the node, as the scheduler does.
	Bind(ctx context.Context, pod *corev1.Pod, node string) error
	// DeleteNow deletes the pod with a grace period of 0.
	DeleteNow(ctx context.Context, pod *corev1.Pod) error
	// UpdatePodStatus changes the pod's status subresource.
	UpdatePodStatus(ctx context.Context, pod *corev1.Pod, change func(*corev1.Pod)) error

	Node(ctx context.Context, name string) (*corev1.Node, error)
	CreateNode(ctx context.Context, node *corev1.Node) error
	// UpdateNodeStatus changes the node's status subresource; NotFound
	// if it is not registered.
	UpdateNodeStatus(ctx context.Context, name string, change func(*corev1.Node)) error

	// HasLeases: the cluster keeps the nodes' heartbeat Leases.
	HasLeases() bool
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) error
	// UpdateLease changes a Lease; NotFound if there is none.
	UpdateLease(ctx context.Context, namespace, name string, change func(*coordinationv1.Lease)) error
}
