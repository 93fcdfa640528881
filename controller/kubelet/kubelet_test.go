package kubelet_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/controller/kubelet"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

const ns = "internals-demo"

// TestPodGoesPendingToRunningOnAWatch is the lesson's waitForPodReady done
// right: a watch from the create's resourceVersion sees the pod scheduled,
// then Running and Ready, as MODIFIED events. The scheduling and the
// start are the node's own writes, made as its identity.
func TestPodGoesPendingToRunningOnAWatch(t *testing.T) {
	lab := startNode(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(asAdmin, 30*time.Second)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}
	obj, err := lab.pods.Create(ctx, pod, registry.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*corev1.Pod)
	if created.Status.Phase != corev1.PodPending {
		t.Fatalf("a new pod is %q, want Pending", created.Status.Phase)
	}
	w, err := lab.pods.Watch(ctx, storage.WatchOptions{Namespace: ns, ResourceVersion: created.ResourceVersion,
		Predicate: storage.Predicate{Field: fields.OneTermEqualSelector("metadata.name", "web")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var scheduled, ran bool
	for ev := range until(ctx, w) {
		if ev.Type != watch.Modified {
			t.Fatalf("unexpected %s: %v", ev.Type, ev.Object)
		}
		p := ev.Object.(*corev1.Pod)
		if p.Spec.NodeName == kubelet.NodeName && p.Status.Phase == corev1.PodPending {
			scheduled = true
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		if !scheduled {
			t.Error("the pod ran without a MODIFIED for its scheduling first")
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		cs := p.Status.ContainerStatuses
		if !ready || p.Status.PodIP == "" || p.Status.HostIP != "10.0.0.10" || p.Status.StartTime == nil ||
			len(cs) != 1 || !cs[0].Ready || cs[0].Image != "nginx:1.27" || cs[0].State.Running == nil || !strings.HasPrefix(cs[0].ContainerID, "containerd://") {
			t.Fatalf("Running, but not as a kubelet reports it: %+v", p.Status)
		}
		ran = true
		break
	}
	if !ran {
		t.Fatalf("the pod never ran (%v)", ctx.Err())
	}

	// The binding and the status are written by the node, as the node:
	// the trace says who, as kube's audit log does.
	podPath := "/api/v1/namespaces/" + ns + "/pods/web"
	wrote(t, lab.traces, "the binding", "create", podPath+"/binding")
	wrote(t, lab.traces, "the Running status", "update", podPath+"/status")
}

// TestBoundPodDeletionIsGraceful: deleting a pod the node runs only marks
// it (deletionTimestamp, grace period) and a watch sees that MODIFIED; the
// simulated kubelet then stops it and the pod goes. An unbound pod has
// nothing to stop and goes at once.
func TestBoundPodDeletionIsGraceful(t *testing.T) {
	lab := startNode(t, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(asAdmin, 30*time.Second)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "graceful", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	_, err := lab.pods.Create(ctx, pod, registry.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key{Namespace: ns, Name: "graceful"}
	var running *corev1.Pod
	eventually.Holds(t, "the pod Running", func() (bool, error) {
		p, err := lab.pods.Get(ctx, key, "")
		if err != nil {
			return false, err
		}
		running = p.(*corev1.Pod)
		return running.Status.Phase == corev1.PodRunning, nil
	})
	// From the Running pod on: the pods' watch cache, started with the
	// registry, may have begun its window after the create.
	w, err := lab.pods.Watch(ctx, storage.WatchOptions{Namespace: ns, ResourceVersion: running.ResourceVersion,
		Predicate: storage.Predicate{Field: fields.OneTermEqualSelector("metadata.name", "graceful")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	grace := int64(30)
	if _, gone, err := lab.pods.Delete(ctx, key, registry.DeleteOptions{GracePeriodSeconds: &grace}); err != nil || gone {
		t.Fatalf("delete: gone %v, %v; want the pod marked, not gone", gone, err)
	}
	var marked, deleted bool
	for ev := range until(ctx, w) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch: %v", ev)
		}
		if ev.Type == watch.Modified && p.DeletionTimestamp != nil {
			if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 30 {
				t.Fatalf("marked with grace %v, want 30", p.DeletionGracePeriodSeconds)
			}
			marked = true
		}
		if ev.Type == watch.Deleted {
			deleted = true
			break
		}
	}
	if !marked || !deleted {
		t.Fatalf("marked %v, deleted %v: want a MODIFIED with deletionTimestamp, then DELETED", marked, deleted)
	}
	// The kubelet ended it, as the node, with a grace period of 0.
	wrote(t, lab.traces, "the pod's final delete", "delete", "/api/v1/namespaces/"+ns+"/pods/graceful")

	// An unbound pod: a scheduling gate keeps the scheduler off it.
	other := pod.DeepCopy()
	other.Name, other.Spec.NodeName = "elsewhere", ""
	other.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	if _, err := lab.pods.Create(ctx, other, registry.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	otherKey := storage.Key{Namespace: ns, Name: "elsewhere"}
	if _, _, err := lab.pods.Delete(ctx, otherKey, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.pods.Get(ctx, otherKey, ""); !apierrors.IsNotFound(err) {
		t.Fatalf("an unbound pod outlived its delete: %v", err)
	}
}

// TestNodeHoldsItsLease: the node's heartbeat Lease is in kube-node-lease,
// held by the node and owned by it, and both are the node's own writes.
func TestNodeHoldsItsLease(t *testing.T) {
	lab := startNode(t, 0)
	ctx := asAdmin
	eventually.Holds(t, "the node's lease", func() (bool, error) {
		obj, err := lab.leases.Get(ctx, storage.Key{Namespace: kubelet.LeaseNamespace, Name: kubelet.NodeName}, "")
		if err != nil {
			return false, err
		}
		lease := obj.(*coordinationv1.Lease)
		obj, err = lab.nodes.Get(ctx, storage.Key{Name: kubelet.NodeName}, "")
		if err != nil {
			return false, err
		}
		node := obj.(*corev1.Node)
		ok := lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == kubelet.NodeName &&
			lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds == 40 &&
			lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) < time.Minute &&
			len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == node.UID
		// The Lease follows the node's registration at once, not a
		// renewal period (10 s) later, whichever heartbeat ran first
		// (8 s: wide of a loaded machine, in whole seconds).
		if ok && lease.CreationTimestamp.Sub(node.CreationTimestamp.Time) > 8*time.Second {
			t.Fatalf("the lease was created %v after the node", lease.CreationTimestamp.Sub(node.CreationTimestamp.Time))
		}
		return ok, nil
	})
	wrote(t, lab.traces, "the node", "create", "/api/v1/nodes")
	wrote(t, lab.traces, "the lease", "create", "/apis/coordination.k8s.io/v1/namespaces/"+kubelet.LeaseNamespace+"/leases")
}

// TestNodeAsKubectlShowsIt: the registered node, as `kubectl get nodes`
// prints it, Ready and at the kubelet's version.
func TestNodeAsKubectlShowsIt(t *testing.T) {
	lab := startAPI(t)
	eventually.Holds(t, "the node registered", func() (bool, error) {
		_, err := lab.nodes.Get(asAdmin, storage.Key{Name: kubelet.NodeName}, "")
		return err == nil, err
	})
	out, stderr, err := lab.kubectl(t, "get", "nodes")
	if err != nil || !strings.Contains(out, kubelet.NodeName) || !strings.Contains(out, "Ready") || !strings.Contains(out, kubelet.Version) {
		t.Fatalf("kubectl get nodes: %v\n%s%s", err, out, stderr)
	}
}

// until is w's events until w ends or ctx does, whichever comes first.
func until(ctx context.Context, w watch.Interface) iter.Seq[watch.Event] {
	return func(yield func(watch.Event) bool) {
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || !yield(ev) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}
