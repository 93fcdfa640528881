// Package serviceip is kube-apiserver's service-IP repair controller for
// kubelab: every few minutes it reads every Service and reports, as
// Warning events on the Service, a cluster IP that is not an IP, lies
// outside the service range, or was given to more than one Service (kubelab
// derives a new Service's IP from its name and does not refuse one a client
// picks, so two Services can end up sharing one). The events carry kube's
// reasons and wording, so `kubectl describe service` reads as on a cluster.
package serviceip

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// Range is the service CIDR kubelab allocates from: kube's default.
var Range = netip.MustParsePrefix("10.96.0.0/12")

// Interval is how often the Services are checked, as kube's repair loop.
const Interval = 3 * time.Minute

// component names the controller in its events, as kube's does.
const component = "ipallocator-repair-controller"

// Config is what the controller reads and writes.
type Config struct {
	Services, Events *registry.Store
	Logger           *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Repair is the controller.
type Repair struct {
	cfg  Config
	done atomic.Bool

	mu sync.Mutex
	// reported remembers each problem already told, by Service UID, so a
	// Service gets one event per problem rather than one every pass.
	reported map[types.UID]string
}

// New returns the controller; Run starts it.
func New(cfg Config) *Repair {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Repair{cfg: cfg, reported: map[types.UID]string{}}
}

// Done reports whether a first pass over every Service has completed
// (kube's start-service-ip-repair-controllers hook).
func (r *Repair) Done() bool { return r.done.Load() }

// Run checks now and every Interval until ctx ends.
func (r *Repair) Run(ctx context.Context) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		if err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("checking service cluster IPs", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// problem is what is wrong with one Service's cluster IP.
type problem struct {
	svc             *corev1.Service
	reason, message string
}

// RunOnce checks every Service once and reports what is newly wrong.
func (r *Repair) RunOnce(ctx context.Context) error {
	list, err := r.cfg.Services.List(ctx, storage.ListOptions{})
	if err != nil {
		return err
	}
	services := make([]*corev1.Service, 0, len(list.Items))
	for _, obj := range list.Items {
		services = append(services, obj.(*corev1.Service))
	}
	// Only what is wrong now is remembered: a Service deleted or mended
	// is forgotten, and reported again if it goes wrong again.
	r.mu.Lock()
	before := r.reported
	r.mu.Unlock()
	now := map[types.UID]string{}
	for _, p := range check(services) {
		if before[p.svc.UID] != p.reason {
			if err := r.report(ctx, p); err != nil {
				r.mu.Lock()
				maps.Copy(r.reported, now) // keep what this pass did report
				r.mu.Unlock()
				return err
			}
		}
		now[p.svc.UID] = p.reason
	}
	r.mu.Lock()
	r.reported = now
	r.mu.Unlock()
	r.done.Store(true)
	return nil
}

// check finds what is wrong with the Services' cluster IPs. Of Services
// sharing an IP, the oldest keeps it and the others are reported.
func check(services []*corev1.Service) []problem {
	sorted := append([]*corev1.Service(nil), services...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var problems []problem
	holder := map[netip.Addr]bool{}
	for _, svc := range sorted {
		for _, ipText := range clusterIPs(svc) {
			ip, err := netip.ParseAddr(ipText)
			switch {
			case err != nil:
				problems = append(problems, problem{svc, "ClusterIPNotValid", fmt.Sprintf("Cluster IP %s is not a valid IP; please recreate Service", ipText)})
			case !Range.Contains(ip):
				problems = append(problems, problem{svc, "ClusterIPOutOfRange", fmt.Sprintf("Cluster IP [%s]: %s is not within any configured Service CIDR; please recreate service", family(ip), ip)})
			case holder[ip]:
				problems = append(problems, problem{svc, "ClusterIPAlreadyAllocated", fmt.Sprintf("Cluster IP [%s]:%s was assigned to multiple services; please recreate service", family(ip), ip)})
			default:
				holder[ip] = true
			}
		}
	}
	return problems
}

// clusterIPs are the addresses a Service holds: none for a headless or
// ExternalName Service.
func clusterIPs(svc *corev1.Service) []string {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	if len(svc.Spec.ClusterIPs) > 0 {
		return svc.Spec.ClusterIPs
	}
	if svc.Spec.ClusterIP != "" {
		return []string{svc.Spec.ClusterIP}
	}
	return nil
}

func family(ip netip.Addr) corev1.IPFamily {
	if ip.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// report writes a Warning event on the Service, as an events.k8s.io
// recorder would.
func (r *Repair) report(ctx context.Context, p problem) error {
	now := r.cfg.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.svc.Name + "." + rand.String(16), Namespace: p.svc.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Service", APIVersion: "v1", Namespace: p.svc.Namespace, Name: p.svc.Name,
			UID: p.svc.UID, ResourceVersion: p.svc.ResourceVersion,
		},
		Reason: p.reason, Message: p.message, Type: corev1.EventTypeWarning,
		Source:    corev1.EventSource{Component: component},
		EventTime: metav1.NewMicroTime(now), Action: "ClusterIPAllocation",
		ReportingController: component, ReportingInstance: component,
	}
	_, err := r.cfg.Events.Create(ctx, ev, registry.CreateOptions{FieldManager: component})
	return err
}
