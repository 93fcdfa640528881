// Package kubelet is kubelab's simulated node, in the spirit of kwok: one
// Node that registers itself and keeps its Ready condition's heartbeat, a
// scheduler that binds every unbound pod to it, and a kubelet that, after a
// short delay, reports each bound pod Running with the status a real
// kubelet writes. No container runs; the API objects move exactly as on a
// cluster, so the lesson's "wait for the pod to be Running" ends on a real
// MODIFIED event.
package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/controller"
)

// NodeName is the simulated node's name.
const NodeName = "kubelab-node"

// Version is what the node reports as its kubelet's version.
const Version = "v1.37.2"

// Heartbeat is how often the node renews its Ready condition (a kubelet
// reports within its node-monitor grace period of 40 seconds).
const Heartbeat = 40 * time.Second

// FieldManager is the manager a kubelet's writes record in managedFields.
const FieldManager = "kubelet"

// LeaseNamespace holds the nodes' heartbeat Leases.
const LeaseNamespace = "kube-node-lease"

// leaseDuration and leaseRenew are a kubelet's defaults: the Lease is
// renewed every quarter of its duration.
const (
	leaseDuration = 40
	leaseRenew    = 10 * time.Second
)

// Config is the simulated node's settings.
type Config struct {
	// Cluster is where the node lives: kubelab's own core (OnRegistry),
	// or any API server through client-go (OnClient).
	Cluster Cluster
	// StartDelay is how long a bound pod stays Pending before it runs.
	StartDelay time.Duration
	Logger     *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Node runs the simulated node, scheduler and kubelet.
type Node struct {
	cfg  Config
	loop *controller.Loop
	// running is what Run started beside its loop (heartbeats, the feed,
	// pods' delayed starts): Run returns once it has all stopped, since
	// whoever runs the node stops the stores it writes after that.
	running sync.WaitGroup
}

// New returns the simulated node; Run starts it.
func New(cfg Config) *Node {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{cfg: cfg}
	n.loop = controller.New("kubelet", n.sync, cfg.Logger)
	return n
}

func podKey(obj runtime.Object) (string, bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok || (p.Spec.NodeName != "" && p.Spec.NodeName != NodeName) {
		return "", false
	}
	if p.DeletionTimestamp != nil {
		// Being deleted: ours to stop, unless already stopped.
		stopping := p.Spec.NodeName == NodeName && (p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds > 0)
		return p.Namespace + "/" + p.Name, stopping
	}
	if p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) > 0 {
		return "", false // the scheduler waits until every gate is lifted
	}
	if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return "", false // already running (or finished): nothing to do
	}
	return p.Namespace + "/" + p.Name, true
}

// Run registers the node, keeps it alive and handles pods until ctx ends.
func (n *Node) Run(ctx context.Context) {
	n.running.Go(func() { n.heartbeat(ctx) })
	if n.cfg.Cluster.HasLeases() {
		n.running.Go(func() { n.renewLease(ctx) })
	}
	n.running.Go(func() { n.cfg.Cluster.FeedPods(ctx, podKey, n.loop) })
	n.loop.Run(ctx)
	n.running.Wait()
}

func (n *Node) heartbeat(ctx context.Context) {
	t := time.NewTicker(Heartbeat)
	defer t.Stop()
	for {
		if err := n.register(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("simulated node heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renewLease keeps the node's Lease fresh, the heartbeat a kubelet sends
// between its (rarer) status updates. As kubelet's lease controller does,
// it retries a failure with a backoff from 200 ms up to 7 s rather than
// waiting for the next renewal: the first try usually comes before the
// node is registered, on the other heartbeat, and the Lease would
// otherwise appear a whole renewal period late.
func (n *Node) renewLease(ctx context.Context) {
	const firstRetry, maxRetry = 200 * time.Millisecond, 7 * time.Second
	retry := firstRetry
	for {
		wait := leaseRenew
		if err := n.renew(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if !apierrors.IsNotFound(err) { // NotFound: the node is not registered yet
				n.cfg.Logger.Warn("simulated node lease renewal failed", "err", err)
			}
			wait, retry = retry, min(2*retry, maxRetry)
		} else {
			retry = firstRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (n *Node) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(n.cfg.Now())
	err := n.cfg.Cluster.UpdateLease(ctx, LeaseNamespace, NodeName, func(lease *coordinationv1.Lease) { lease.Spec.RenewTime = &now })
	if !apierrors.IsNotFound(err) {
		return err
	}
	node, err := n.cfg.Cluster.Node(ctx, NodeName)
	if err != nil {
		return err // registered first, on the other heartbeat
	}
	holder, duration := NodeName, int32(leaseDuration)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: NodeName, Namespace: LeaseNamespace,
			// Owned by the node, so it goes with it.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: NodeName, UID: node.UID}},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now},
	}
	err = n.cfg.Cluster.CreateLease(ctx, lease)
	if apierrors.IsAlreadyExists(err) {
		return nil // another replica made it
	}
	return err
}

// register creates the node, or renews its Ready condition's heartbeat.
func (n *Node) register(ctx context.Context) error {
	now := metav1.NewTime(n.cfg.Now().Truncate(time.Second))
	err := n.cfg.Cluster.UpdateNodeStatus(ctx, NodeName, func(node *corev1.Node) {
		node.Status.Conditions = conditions(now, node.Status.Conditions)
	})
	if !apierrors.IsNotFound(err) {
		return err
	}
	err = n.cfg.Cluster.CreateNode(ctx, newNode(now))
	if apierrors.IsAlreadyExists(err) {
		return nil // another replica registered it
	}
	return err
}

func newNode(now metav1.Time) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node-role.kubernetes.io/worker": "", "kubelab.io/simulated": "true",
			},
			Annotations: map[string]string{"kubelab.io/why": "a simulated node: pods are scheduled here and reported Running, but no container runs"},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24"}},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Phase:      corev1.NodeRunning,
			Conditions: conditions(now, nil),
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.10"}, {Type: corev1.NodeHostName, Address: NodeName}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: Version, KubeProxyVersion: Version, OperatingSystem: "linux", Architecture: "amd64",
				OSImage: "kubelab simulated node", KernelVersion: "simulated", ContainerRuntimeVersion: "simulated://1.0",
				MachineID: "kubelab", SystemUUID: "kubelab", BootID: "kubelab",
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		},
	}
}

// conditions are a healthy node's, with the heartbeat at now and each
// transition time kept from before.
func conditions(now metav1.Time, old []corev1.NodeCondition) []corev1.NodeCondition {
	since := map[corev1.NodeConditionType]metav1.Time{}
	for _, c := range old {
		since[c.Type] = c.LastTransitionTime
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		tr, ok := since[t]
		if !ok {
			tr = now
		}
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: tr}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// sync schedules a pod onto the node, then, once it has waited
// StartDelay since it was created, starts it.
func (n *Node) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	pod, err := n.cfg.Cluster.Pod(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil {
		return n.stop(ctx, pod)
	}
	if pod.Spec.NodeName == "" {
		if len(pod.Spec.SchedulingGates) > 0 {
			return nil
		}
		// As the scheduler does, by the pod's binding.
		err := n.cfg.Cluster.Bind(ctx, pod, NodeName)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // deleted meanwhile, or bound elsewhere
		}
		return err
	}
	if pod.Spec.NodeName != NodeName || (pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "") {
		return nil
	}
	if wait := pod.CreationTimestamp.Add(n.cfg.StartDelay).Sub(n.cfg.Now()); wait > 0 {
		n.running.Go(func() {
			select {
			case <-time.After(wait):
				n.loop.Enqueue(key)
			case <-ctx.Done():
			}
		})
		return nil
	}
	return n.update(ctx, pod, n.start)
}

// stop ends a pod being deleted, as a kubelet does once its containers
// have stopped (no container runs here, so at once): it deletes the pod
// again with a grace period of 0, which removes it unless a finalizer
// still holds it.
func (n *Node) stop(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName != NodeName || (pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0) {
		return nil
	}
	err := n.cfg.Cluster.DeleteNow(ctx, pod)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a new pod of the same name
	}
	return err
}

func (n *Node) update(ctx context.Context, pod *corev1.Pod, change func(*corev1.Pod, metav1.Time)) error {
	now := metav1.NewTime(n.cfg.Now().Truncate(time.Second))
	err := n.cfg.Cluster.UpdatePodStatus(ctx, pod, func(p *corev1.Pod) { change(p, now) })
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted meanwhile
	}
	return err
}

// start reports the pod Running, with what a kubelet reports.
func (n *Node) start(p *corev1.Pod, now metav1.Time) {
	if p.Status.Phase == corev1.PodRunning {
		return
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = "10.0.0.10"
	p.Status.HostIPs = []corev1.HostIP{{IP: "10.0.0.10"}}
	ip := podIP(p.UID)
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.StartTime = &now
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		setCondition(&p.Status, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		started := true
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: "containerd://" + digest(string(p.UID)+"/"+c.Name),
			Ready: true, Started: &started, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}

func setCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				return
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// podIP is a stable address in the node's pod CIDR, from the pod's UID.
func podIP(uid types.UID) string {
	sum := sha256.Sum256([]byte(uid))
	return fmt.Sprintf("10.244.0.%d", 2+int(sum[0])%250)
}

func imageID(image string) string { return image + "@sha256:" + digest(image) }

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
