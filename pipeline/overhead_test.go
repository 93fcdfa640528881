package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/pipeline/internal/storetest"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/pipeline/trace"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// BenchmarkPipelineOverhead is everything the pipeline adds to a pod
// create for one of 500 students, with every stage real: a minted token
// (cached), RBAC over 500 RoleBindings, NamespaceLifecycle,
// ServiceAccount (with its JSON patch), RequireLimits, and the trace
// published to a bus with a subscriber. Storage is not included: this is
// the overhead on top of the write.
func BenchmarkPipelineOverhead(b *testing.B) {
	const students = 500
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := storagetest.StartEtcd(b).Client()
	nsStore := storetest.Store(b, client, storetest.Namespaces, nil)
	rb := storetest.Store(b, client, storetest.RoleBindings, nil)
	src := rbac.Sources{Roles: storetest.Store(b, client, storetest.Roles, nil), RoleBindings: rb,
		ClusterRoles: storetest.Store(b, client, storetest.ClusterRoles, nil), ClusterRoleBindings: storetest.Store(b, client, storetest.ClusterRoleBindings, nil)}
	if err := rbac.EnsureBootstrapPolicy(ctx, src.ClusterRoles.(rbac.Creator), src.ClusterRoleBindings.(rbac.Creator)); err != nil {
		b.Fatal(err)
	}
	an := authn.New(authn.Config{Store: authn.NewEtcdTokens(client)})
	tokens := make([]string, students)
	for i := range students {
		name := fmt.Sprintf("student-%03d", i)
		storetest.Create(b, nsStore, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
		storetest.Create(b, rb, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}})
		var err error
		if tokens[i], err = an.Mint(ctx, pipeline.User{Name: name}); err != nil {
			b.Fatal(err)
		}
	}
	authz := rbac.New(src, storetest.Quiet())
	authz.Start(ctx)
	namespaces := admission.NewNamespaceCache(nsStore, nsStore)
	namespaces.Start(ctx)
	if err := authz.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	if err := namespaces.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	bus := trace.NewBus(trace.Config{})
	sub := bus.Subscribe(ctx, func(t pipeline.Trace) bool { return t.User == "student-000" }, 64)
	go func() {
		for range sub {
		}
	}()
	p := &pipeline.Pipeline{Authn: an, Authz: authz, Traces: bus, Admission: &admission.Chain{
		Mutating:   []admission.MutatingPlugin{admission.NewNamespaceLifecycle(namespaces), admission.ServiceAccount{}, admission.DefaultTolerationSeconds{}},
		Validating: []admission.ValidatingPlugin{&admission.RequireLimits{Namespaces: namespaces}},
	}}
	podTemplate := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}

	// Requests are built up front: what is measured is the pipeline, not
	// the test's HTTP plumbing.
	reqs := make([]*http.Request, students)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodPost, fmt.Sprintf("/api/v1/namespaces/student-%03d/pods", i), nil)
	}
	one := func(i int) {
		ns := fmt.Sprintf("student-%03d", i%students)
		r := reqs[i%students]
		r.Header.Set("Authorization", "Bearer "+tokens[i%students])
		tr := pipeline.NewTrace(r)
		u, err := p.Authenticate(tr, r)
		if err != nil {
			b.Fatal(err)
		}
		a := &pipeline.Attributes{User: u, Verb: "create", Operation: pipeline.Create, IsResourceRequest: true,
			APIVersion: "v1", Resource: "pods", Namespace: ns, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
			Object: podTemplate.DeepCopy()}
		tr.Describe(a)
		if err := p.Authorize(tr, a); err != nil {
			b.Fatal(err)
		}
		if err := p.Admit(r.Context(), tr, a); err != nil {
			b.Fatal(err)
		}
		if err := p.Validate(r.Context(), tr, a); err != nil {
			b.Fatal(err)
		}
		p.Finish(tr, http.StatusCreated)
	}
	for i := range students { // warm the token cache, as a class in session has
		one(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		one(i)
		i++
	}
	b.StopTimer()
	const samples = 20000
	lat := make([]time.Duration, samples)
	for j := range samples {
		start := time.Now()
		one(j)
		lat[j] = time.Since(start)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[samples/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[samples*99/100].Nanoseconds()), "p99-ns")
}
