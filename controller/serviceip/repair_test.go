package serviceip_test

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/controller/serviceip"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/storage"
)

// user is who the test acts as, as a student's kubectl would.
var user = pipeline.User{Name: "student", Groups: []string{pipeline.AllAuthenticated}}

// fixture is a registry with the namespace "default" and the two stores
// the repair loop is given, as the server gives them.
func fixture(t *testing.T) (ctx context.Context, services, events *registry.Store) {
	t.Helper()
	reg := registrytest.Start(t)
	ctx = registry.WithUser(context.Background(), user)
	if _, err := registrytest.Core(t, reg, "namespaces").Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, registry.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ctx, registrytest.Core(t, reg, "services"), registrytest.Core(t, reg, "events")
}

func createService(t *testing.T, ctx context.Context, services *registry.Store, name, ip string) *corev1.Service {
	t.Helper()
	obj, err := services.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}},
	}, registry.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	return obj.(*corev1.Service)
}

// reported lists the repair loop's events in "default" as "service reason:
// message", checking each is a Warning on a Service.
func reported(t *testing.T, ctx context.Context, events *registry.Store) []string {
	t.Helper()
	list, err := events.List(ctx, storage.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, obj := range list.Items {
		ev := obj.(*corev1.Event)
		if ev.Source.Component != "ipallocator-repair-controller" {
			continue
		}
		if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "Service" {
			t.Errorf("event %s: type %q on %q, want a Warning on a Service", ev.Name, ev.Type, ev.InvolvedObject.Kind)
		}
		got = append(got, ev.InvolvedObject.Name+" "+ev.Reason+": "+ev.Message)
	}
	sort.Strings(got)
	return got
}

func TestRepairReportsBadAndSharedClusterIPsOnce(t *testing.T) {
	ctx, services, events := fixture(t)
	createService(t, ctx, services, "first", "10.96.5.5")
	// Creation timestamps have one-second resolution: make "second" the newer.
	time.Sleep(1100 * time.Millisecond)
	second := createService(t, ctx, services, "second", "10.96.5.5")
	outside := createService(t, ctx, services, "outside", "192.168.0.10")
	createService(t, ctx, services, "headless", corev1.ClusterIPNone)
	createService(t, ctx, services, "allocated", "")

	r := serviceip.New(serviceip.Config{Services: services, Events: events})
	asAPIServer := registry.WithUser(context.Background(), registry.APIServer) // the repair loop is kube-apiserver's own
	if r.Done() {
		t.Fatal("done before the first pass")
	}
	for range 2 { // the second pass must not report again
		if err := r.RunOnce(asAPIServer); err != nil {
			t.Fatal(err)
		}
	}
	if !r.Done() {
		t.Fatal("not done after a pass")
	}
	got := reported(t, ctx, events)
	want := []string{
		outside.Name + " ClusterIPOutOfRange: Cluster IP [IPv4]: 192.168.0.10 is not within any configured Service CIDR; please recreate service",
		second.Name + " ClusterIPAlreadyAllocated: Cluster IP [IPv4]:10.96.5.5 was assigned to multiple services; please recreate service",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events:\n%q\nwant:\n%q", got, want)
	}
}

// TestRunChecksAtOnceAndStopsWithItsContext: Run, as the server starts
// it, makes its first pass without waiting for its interval, and returns
// when its context ends.
func TestRunChecksAtOnceAndStopsWithItsContext(t *testing.T) {
	ctx, services, events := fixture(t)
	outside := createService(t, ctx, services, "outside", "192.168.0.10")
	r := serviceip.New(serviceip.Config{Services: services, Events: events})
	runCtx, cancel := context.WithCancel(registry.WithUser(context.Background(), registry.APIServer))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually.Holds(t, "the first pass", func() (bool, error) { return r.Done(), nil })
	want := outside.Name + " ClusterIPOutOfRange: Cluster IP [IPv4]: 192.168.0.10 is not within any configured Service CIDR; please recreate service"
	if got := reported(t, ctx, events); len(got) != 1 || got[0] != want {
		t.Fatalf("events after the first pass: %q, want %q", got, want)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
