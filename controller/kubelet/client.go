package kubelet

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/kubelab/kubelab/controller"
)

// OnClient is a cluster reached through client-go, as a kubelet and a
// scheduler reach theirs: kube-apiserver, for the kube core.
func OnClient(client kubernetes.Interface) Cluster { return onClient{client: client} }

type onClient struct{ client kubernetes.Interface }

var _ Cluster = onClient{}

// FeedPods runs a pod informer, as a kubelet's and a scheduler's.
func (c onClient) FeedPods(ctx context.Context, keyOf controller.KeyFunc, loop *controller.Loop) {
	factory := informers.NewSharedInformerFactory(c.client, 10*time.Minute)
	queue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(runtime.Object); ok {
			if key, ok := keyOf(o); ok {
				loop.Enqueue(key)
			}
		}
	}
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    queue,
		UpdateFunc: func(_, obj any) { queue(obj) },
		DeleteFunc: queue,
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

func (c onClient) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c onClient) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	return c.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

func (c onClient) DeleteNow(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	return c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
}

func (c onClient) UpdatePodStatus(ctx context.Context, pod *corev1.Pod, change func(*corev1.Pod)) error {
	pods := c.client.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return notThePod(pod)
		}
		cur = cur.DeepCopy()
		change(cur)
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
}

// notThePod is the answer to a change of a pod that was replaced by
// another of its name: the change was for the one that is gone.
func notThePod(pod *corev1.Pod) error {
	return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name+" (uid "+string(pod.UID)+")")
}

func (c onClient) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (c onClient) CreateNode(ctx context.Context, node *corev1.Node) error {
	_, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: FieldManager})
	return err
}

func (c onClient) UpdateNodeStatus(ctx context.Context, name string, change func(*corev1.Node)) error {
	nodes := c.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		change(cur)
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
}

func (c onClient) HasLeases() bool { return true }

func (c onClient) CreateLease(ctx context.Context, lease *coordinationv1.Lease) error {
	_, err := c.client.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{FieldManager: FieldManager})
	return err
}

func (c onClient) UpdateLease(ctx context.Context, namespace, name string, change func(*coordinationv1.Lease)) error {
	leases := c.client.CoordinationV1().Leases(namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		change(cur)
		_, err = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
}
