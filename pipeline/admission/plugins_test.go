package admission_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/internal/storetest"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func namespace(name string, phase corev1.NamespacePhase, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NamespaceStatus{Phase: phase}}
}

// namespaces stores alice (active), leaving (Terminating) and strict
// (labelled to require limits) in a real etcd, and a cache following them.
func namespaces(t *testing.T) (*etcd3.Store, *admission.NamespaceCache) {
	t.Helper()
	s := storetest.Store(t, storagetest.StartEtcd(t).Client(), storetest.Namespaces, nil)
	storetest.Create(t, s, namespace("alice", corev1.NamespaceActive, nil))
	storetest.Create(t, s, namespace("leaving", corev1.NamespaceTerminating, nil))
	storetest.Create(t, s, namespace("strict", corev1.NamespaceActive, map[string]string{admission.RequireLimitsLabel: "true"}))
	c := admission.NewNamespaceCache(s, s)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.Start(ctx)
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := c.WaitForSync(wait); err != nil {
		t.Fatal(err)
	}
	return s, c
}

func pod(name string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: containers}}
}

func withOp(a *pipeline.Attributes, verb string) *pipeline.Attributes {
	a.Verb, a.Operation = verb, pipeline.OperationFor(verb)
	return a
}

func TestNamespaceLifecycle(t *testing.T) {
	store, cache := namespaces(t)
	l := admission.NewNamespaceLifecycle(cache)
	nsAttrs := func(verb, name string) *pipeline.Attributes {
		return withOp(&pipeline.Attributes{IsResourceRequest: true, APIVersion: "v1", Resource: "namespaces", Namespace: name, Name: name}, verb)
	}
	for _, tc := range []struct {
		name     string
		a        *pipeline.Attributes
		wantCode int32
		wantMsg  string
	}{
		{"OK/create in active namespace", podAttrs("alice", pod("web")), 0, ""},
		{"OK/update in terminating namespace", withOp(podAttrs("leaving", pod("web")), "update"), 0, ""},
		{"OK/delete in terminating namespace", withOp(podAttrs("leaving", pod("web")), "delete"), 0, ""},
		{"OK/cluster-scoped", withOp(&pipeline.Attributes{IsResourceRequest: true, Resource: "namespaces", Namespace: "new", Name: "new"}, "create"), 0, ""},
		{"OK/delete a student namespace", nsAttrs("delete", "alice"), 0, ""},
		{"OK/access review in missing namespace", withOp(&pipeline.Attributes{IsResourceRequest: true, APIGroup: "authorization.k8s.io",
			Resource: "localsubjectaccessreviews", Namespace: "nope"}, "create"), 0, ""},
		{"ErrMissingNamespace", podAttrs("nope", pod("web")), http.StatusNotFound, `namespaces "nope" not found`},
		{"ErrTerminatingNamespace", podAttrs("leaving", pod("web")), http.StatusForbidden,
			`pods "web" is forbidden: unable to create new content in namespace leaving because it is being terminated`},
		{"ErrImmortal", nsAttrs("delete", "default"), http.StatusForbidden, `namespaces "default" is forbidden: this namespace may not be deleted`},
		{"ErrImmortalKubeSystem", nsAttrs("delete", "kube-system"), http.StatusForbidden, `namespaces "kube-system" is forbidden: this namespace may not be deleted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Admit(context.Background(), tc.a)
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tc.wantCode || err.Error() != tc.wantMsg {
				t.Fatalf("got %v, want %d %s", err, tc.wantCode, tc.wantMsg)
			}
		})
	}

	t.Run("OK/terminating cause", func(t *testing.T) {
		err := l.Admit(context.Background(), podAttrs("leaving", pod("web")))
		causes := err.(apierrors.APIStatus).Status().Details.Causes
		if len(causes) != 1 || causes[0].Type != corev1.NamespaceTerminatingCause || causes[0].Field != "metadata.namespace" {
			t.Fatalf("causes %+v", causes)
		}
	})
	t.Run("OK/namespace created a moment ago", func(t *testing.T) {
		storetest.Create(t, store, namespace("fresh", corev1.NamespaceActive, nil))
		if err := l.Admit(context.Background(), podAttrs("fresh", pod("web"))); err != nil {
			t.Fatalf("a namespace not yet in the cache was refused: %v", err)
		}
	})
	t.Run("ErrNamespaceDeletedAMomentAgo", func(t *testing.T) {
		if err := l.Admit(context.Background(), nsAttrs("delete", "alice")); err != nil {
			t.Fatal(err)
		}
		storetest.Delete(t, store, "", "alice")
		// Until the watch catches up the cache still has alice; the deletion
		// having passed admission makes lookups go to storage.
		if err := l.Admit(context.Background(), podAttrs("alice", pod("web"))); !apierrors.IsNotFound(err) {
			t.Fatalf("create in a just-deleted namespace: %v", err)
		}
	})
}

func TestServiceAccountDefaultsThePod(t *testing.T) {
	c := &admission.Chain{Mutating: []admission.MutatingPlugin{admission.ServiceAccount{}}}
	for _, tc := range []struct {
		name      string
		a         *pipeline.Attributes
		wantSA    string
		wantPatch string
	}{
		{"OK/defaulted", podAttrs("alice", pod("web")), "default",
			`[{"op":"add","path":"/spec/serviceAccount","value":"default"},{"op":"add","path":"/spec/serviceAccountName","value":"default"}]`},
		{"OK/named account kept", podAttrs("alice", func() *corev1.Pod {
			p := pod("web")
			p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "builder", "builder"
			return p
		}()), "builder", ""},
		{"OK/update untouched", withOp(podAttrs("alice", pod("web")), "update"), "", ""},
		{"OK/status untouched", func() *pipeline.Attributes { a := podAttrs("alice", pod("web")); a.Subresource = "status"; return a }(), "", ""},
		{"OK/mirror pod untouched", podAttrs("alice", func() *corev1.Pod {
			p := pod("web")
			p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
			return p
		}()), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := c.Admit(context.Background(), tc.a)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.a.Object.(*corev1.Pod).Spec.ServiceAccountName; got != tc.wantSA {
				t.Fatalf("serviceAccountName %q, want %q", got, tc.wantSA)
			}
			if string(recs[0].Patch) != tc.wantPatch {
				t.Fatalf("patch %s, want %s", recs[0].Patch, tc.wantPatch)
			}
		})
	}
}

func limits(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.ResourceRequirements{Limits: l}
}

func TestRequireLimits(t *testing.T) {
	_, cache := namespaces(t)
	p := &admission.RequireLimits{Namespaces: cache}
	full := corev1.Container{Name: "nginx", Image: "nginx:1.27", Resources: limits("500m", "128Mi")}
	for _, tc := range []struct {
		name    string
		a       *pipeline.Attributes
		wantMsg string
	}{
		{"OK/limits set", podAttrs("strict", pod("web", full)), ""},
		{"OK/namespace not labelled", podAttrs("alice", pod("web")), ""},
		{"OK/missing namespace left to NamespaceLifecycle", podAttrs("nope", pod("web")), ""},
		{"OK/update not checked", withOp(podAttrs("strict", pod("web")), "update"), ""},
		{"ErrNoLimits", podAttrs("strict", pod("web")),
			`pods "web" is forbidden: namespace "strict" requires resource limits (label kubelab.io/require-limits=true): ` +
				`container "nginx" must set resources.limits.cpu and resources.limits.memory`},
		{"ErrMemoryMissing", podAttrs("strict", pod("web", corev1.Container{Name: "app", Resources: limits("1", "")})),
			`pods "web" is forbidden: namespace "strict" requires resource limits (label kubelab.io/require-limits=true): ` +
				`container "app" must set resources.limits.memory`},
		{"ErrOneOfTwoContainers", podAttrs("strict", pod("web", full, corev1.Container{Name: "sidecar", Resources: limits("", "64Mi")})),
			`pods "web" is forbidden: namespace "strict" requires resource limits (label kubelab.io/require-limits=true): ` +
				`container "sidecar" must set resources.limits.cpu`},
		{"ErrInitContainer", podAttrs("strict", func() *corev1.Pod {
			p := pod("web", full)
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: limits("", "")}}
			return p
		}()), `pods "web" is forbidden: namespace "strict" requires resource limits (label kubelab.io/require-limits=true): ` +
			`container "init" must set resources.limits.cpu and resources.limits.memory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tc.a)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || err.Error() != tc.wantMsg {
				t.Fatalf("got  %v\nwant %s", err, tc.wantMsg)
			}
		})
	}
}

// TestLabChain is the lab's admission chain on one pod: defaulted by
// ServiceAccount, then refused by RequireLimits, each step recorded.
func TestLabChain(t *testing.T) {
	_, cache := namespaces(t)
	c := &admission.Chain{
		Mutating:   []admission.MutatingPlugin{admission.NewNamespaceLifecycle(cache), admission.ServiceAccount{}},
		Validating: []admission.ValidatingPlugin{&admission.RequireLimits{Namespaces: cache}},
	}
	a := podAttrs("strict", pod("web"))
	recs, err := c.Admit(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	more, err := c.Validate(context.Background(), a)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("validate: %v", err)
	}
	recs = append(recs, more...)
	want := []struct {
		stage    pipeline.Stage
		plugin   string
		decision pipeline.Decision
	}{
		{pipeline.StageMutatingAdmission, "NamespaceLifecycle", pipeline.Allow},
		{pipeline.StageMutatingAdmission, "ServiceAccount", pipeline.Mutate},
		{pipeline.StageValidatingAdmission, "RequireLimits", pipeline.Deny},
	}
	if len(recs) != len(want) {
		t.Fatalf("records %+v", recs)
	}
	for i, w := range want {
		if r := recs[i]; r.Stage != w.stage || r.Plugin != w.plugin || r.Decision != w.decision {
			t.Errorf("record %d: %s %s %s, want %s %s %s", i, r.Stage, r.Plugin, r.Decision, w.stage, w.plugin, w.decision)
		}
	}
	if recs[2].Reason != err.Error() {
		t.Errorf("the denial's record says %q, the client gets %q", recs[2].Reason, err.Error())
	}

	// A create into a missing namespace stops at the first plugin.
	recs, err = c.Admit(context.Background(), podAttrs("nope", pod("web")))
	if !apierrors.IsNotFound(err) || len(recs) != 1 || recs[0].Decision != pipeline.Deny || recs[0].Plugin != "NamespaceLifecycle" {
		t.Fatalf("missing namespace: %v %+v", err, recs)
	}
}
