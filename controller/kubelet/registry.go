package kubelet

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// OnRegistry is the cluster of kubelab's own core: its stores of nodes,
// pods and (if not nil) leases.
func OnRegistry(nodes, pods, leases *registry.Store) Cluster {
	return onRegistry{nodes: nodes, pods: pods, leases: leases}
}

type onRegistry struct{ nodes, pods, leases *registry.Store }

var _ Cluster = onRegistry{}

func (c onRegistry) FeedPods(ctx context.Context, keyOf controller.KeyFunc, loop *controller.Loop) {
	controller.Feed("pods", c.pods, keyOf, loop).Run(ctx)
}

func (c onRegistry) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := c.pods.Get(ctx, storage.Key{Namespace: namespace, Name: name}, "")
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (c onRegistry) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	_, err := c.pods.Bind(ctx, storage.Key{Namespace: pod.Namespace, Name: pod.Name}, pod.UID, node)
	return err
}

func (c onRegistry) DeleteNow(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	_, _, err := c.pods.Delete(ctx, storage.Key{Namespace: pod.Namespace, Name: pod.Name},
		registry.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &storage.Preconditions{UID: &pod.UID}})
	return err
}

func (c onRegistry) UpdatePodStatus(ctx context.Context, pod *corev1.Pod, change func(*corev1.Pod)) error {
	_, err := c.pods.Update(ctx, storage.Key{Namespace: pod.Namespace, Name: pod.Name}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod).DeepCopy()
		change(p)
		return p, nil
	}), registry.UpdateOptions{Subresource: "status", FieldManager: FieldManager, Preconditions: &storage.Preconditions{UID: &pod.UID}})
	return err
}

func (c onRegistry) Node(ctx context.Context, name string) (*corev1.Node, error) {
	obj, err := c.nodes.Get(ctx, storage.Key{Name: name}, "")
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

func (c onRegistry) CreateNode(ctx context.Context, node *corev1.Node) error {
	_, err := c.nodes.Create(ctx, node, registry.CreateOptions{FieldManager: FieldManager})
	return err
}

func (c onRegistry) UpdateNodeStatus(ctx context.Context, name string, change func(*corev1.Node)) error {
	_, err := c.nodes.Update(ctx, storage.Key{Name: name}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		node := cur.(*corev1.Node).DeepCopy()
		change(node)
		return node, nil
	}), registry.UpdateOptions{Subresource: "status", FieldManager: FieldManager})
	return err
}

func (c onRegistry) HasLeases() bool { return c.leases != nil }

func (c onRegistry) CreateLease(ctx context.Context, lease *coordinationv1.Lease) error {
	_, err := c.leases.Create(ctx, lease, registry.CreateOptions{FieldManager: FieldManager})
	return err
}

func (c onRegistry) UpdateLease(ctx context.Context, namespace, name string, change func(*coordinationv1.Lease)) error {
	_, err := c.leases.Update(ctx, storage.Key{Namespace: namespace, Name: name}, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		lease := cur.(*coordinationv1.Lease).DeepCopy()
		change(lease)
		return lease, nil
	}), registry.UpdateOptions{FieldManager: FieldManager})
	return err
}
