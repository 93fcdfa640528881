package kubelet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/controller/kubelet"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// TestPodGoesPendingToRunningOnAWatch is the lesson's waitForPodReady done
// right: a watch from the create's resourceVersion sees the pod scheduled,
// then Running and Ready, as MODIFIED events.
func TestPodGoesPendingToRunningOnAWatch(t *testing.T) {
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.SimulatedNode = true
		c.PodStartDelay = 300 * time.Millisecond
	})
	cs := lab.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}
	created, err := cs.CoreV1().Pods("internals-demo").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Phase != corev1.PodPending {
		t.Fatalf("a new pod is %q, want Pending", created.Status.Phase)
	}
	w, err := cs.CoreV1().Pods("internals-demo").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var scheduled bool
	for ev := range w.ResultChan() {
		if ev.Type != watch.Modified {
			t.Fatalf("unexpected %s", ev.Type)
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
		break
	}
	if ctx.Err() != nil {
		t.Fatal("the pod never ran")
	}

	// The node, as kubectl shows it.
	out, stderr, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", lab.KubeconfigPath(), "get", "nodes")
	if err != nil || !strings.Contains(out, "kubelab-node") || !strings.Contains(out, "Ready") || !strings.Contains(out, "v1.37.2") {
		t.Fatalf("kubectl get nodes: %v\n%s%s", err, out, stderr)
	}
}

// TestBoundPodDeletionIsGraceful: deleting a pod the node runs only marks
// it (deletionTimestamp, grace period) and a watch sees that MODIFIED; the
// simulated kubelet then stops it and the pod goes. An unbound pod has
// nothing to stop and goes at once.
func TestBoundPodDeletionIsGraceful(t *testing.T) {
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.SimulatedNode = true
		c.PodStartDelay = 100 * time.Millisecond
	})
	cs := lab.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := cs.CoreV1().Pods("internals-demo")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "graceful"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the pod Running", func() (bool, error) {
		p, err := pods.Get(ctx, "graceful", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=graceful", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	grace := int64(30)
	if err := pods.Delete(ctx, "graceful", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	var marked, deleted bool
	for ev := range w.ResultChan() {
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

	// An unbound pod: a scheduling gate keeps the scheduler off it.
	other := pod.DeepCopy()
	other.Name, other.Spec.NodeName = "elsewhere", ""
	other.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	if _, err := pods.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "elsewhere", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "elsewhere", metav1.GetOptions{}); err == nil {
		t.Fatal("an unbound pod outlived its delete")
	}
}

// TestNodeHoldsItsLease: the node's heartbeat Lease is in kube-node-lease,
// held by the node and owned by it.
func TestNodeHoldsItsLease(t *testing.T) {
	lab := kubelabtest.Start(t, func(c *server.Config) { c.SimulatedNode = true })
	cs := lab.Clientset(t)
	ctx := context.Background()
	eventually.Holds(t, "the node's lease", func() (bool, error) {
		lease, err := cs.CoordinationV1().Leases(kubelet.LeaseNamespace).Get(ctx, kubelet.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, kubelet.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ok := lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == kubelet.NodeName &&
			lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds == 40 &&
			lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) < time.Minute &&
			len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == node.UID
		// The Lease follows the node's registration at once, not a
		// renewal period (10 s) later, whichever heartbeat ran first.
		if ok && lease.CreationTimestamp.Sub(node.CreationTimestamp.Time) > 3*time.Second {
			t.Fatalf("the lease was created %v after the node", lease.CreationTimestamp.Sub(node.CreationTimestamp.Time))
		}
		return ok, nil
	})
}
