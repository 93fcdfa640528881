package serviceip_test

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/controller/serviceip"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/registry"
)

func TestRepairReportsBadAndSharedClusterIPsOnce(t *testing.T) {
	lab := kubelabtest.Start(t)
	cs := lab.Clientset(t)
	ctx := context.Background()
	create := func(name, ip string) *corev1.Service {
		t.Helper()
		svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create service %s: %v", name, err)
		}
		return svc
	}
	create("first", "10.96.5.5")
	// Creation timestamps have one-second resolution: make "second" the newer.
	time.Sleep(1100 * time.Millisecond)
	second := create("second", "10.96.5.5")
	outside := create("outside", "192.168.0.10")
	create("headless", corev1.ClusterIPNone)
	create("allocated", "")

	services, _ := lab.API().Registry().Store(corev1.SchemeGroupVersion.WithResource("services"))
	events, _ := lab.API().Registry().Store(corev1.SchemeGroupVersion.WithResource("events"))
	r := serviceip.New(serviceip.Config{Services: services, Events: events})
	ctx = registry.WithUser(ctx, registry.APIServer) // the repair loop is kube-apiserver's own
	if r.Done() {
		t.Fatal("done before the first pass")
	}
	for range 2 { // the second pass must not report again
		if err := r.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !r.Done() {
		t.Fatal("not done after a pass")
	}
	list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range list.Items {
		if ev.Source.Component != "ipallocator-repair-controller" {
			continue
		}
		if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "Service" {
			t.Errorf("event %s: type %q on %q, want a Warning on a Service", ev.Name, ev.Type, ev.InvolvedObject.Kind)
		}
		got = append(got, ev.InvolvedObject.Name+" "+ev.Reason+": "+ev.Message)
	}
	sort.Strings(got)
	want := []string{
		outside.Name + " ClusterIPOutOfRange: Cluster IP [IPv4]: 192.168.0.10 is not within any configured Service CIDR; please recreate service",
		second.Name + " ClusterIPAlreadyAllocated: Cluster IP [IPv4]:10.96.5.5 was assigned to multiple services; please recreate service",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events:\n%q\nwant:\n%q", got, want)
	}
}
