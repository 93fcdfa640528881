package admission_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
)

// Test plugins: what is under test is the chain around them.
type labeler struct{ key, value string }

func (l labeler) Name() string { return "Label-" + l.key }
func (l labeler) Admit(_ context.Context, a *pipeline.Attributes) error {
	m := a.Object.(metav1.Object)
	labels := m.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[l.key] = l.value
	m.SetLabels(labels)
	return nil
}

type refuse struct {
	name string
	err  error
}

func (r refuse) Name() string                                         { return r.name }
func (r refuse) Admit(context.Context, *pipeline.Attributes) error    { return r.err }
func (r refuse) Validate(context.Context, *pipeline.Attributes) error { return r.err }

type noop struct{ calls *int }

func (n noop) Name() string { return "Noop" }
func (n noop) Admit(context.Context, *pipeline.Attributes) error {
	*n.calls++
	return nil
}
func (n noop) Validate(context.Context, *pipeline.Attributes) error {
	*n.calls++
	return nil
}

func podAttrs(ns string, pod *corev1.Pod) *pipeline.Attributes {
	return &pipeline.Attributes{User: pipeline.User{Name: "alice"}, Verb: "create", Operation: pipeline.Create,
		IsResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: ns,
		Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Object: pod}
}

func TestChainRecordsEveryPluginWithItsPatch(t *testing.T) {
	calls := 0
	c := &admission.Chain{Mutating: []admission.MutatingPlugin{labeler{"app", "web"}, noop{&calls}, labeler{"tier", "front"}}}
	a := podAttrs("alice", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	recs, err := c.Admit(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		plugin   string
		decision pipeline.Decision
		patch    string
	}{
		{"Label-app", pipeline.Mutate, `[{"op":"add","path":"/metadata/labels","value":{"app":"web"}}]`},
		{"Noop", pipeline.Allow, ``},
		{"Label-tier", pipeline.Mutate, `[{"op":"add","path":"/metadata/labels/tier","value":"front"}]`},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if r.Stage != pipeline.StageMutatingAdmission || r.Plugin != w.plugin || r.Decision != w.decision || string(r.Patch) != w.patch {
			t.Errorf("record %d: %s %s %s %s; want %s %s %s", i, r.Stage, r.Plugin, r.Decision, r.Patch, w.plugin, w.decision, w.patch)
		}
	}
	if a.Object.(*corev1.Pod).Labels["tier"] != "front" {
		t.Fatal("mutations were not kept on the object")
	}
}

func TestChainStopsAtTheFirstRefusal(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("pods"), "web", errors.New("no"))
	for _, tc := range []struct {
		name     string
		err      error
		decision pipeline.Decision
	}{
		{"ErrDeny", forbidden, pipeline.Deny},
		{"ErrInternal", errors.New("lookup failed"), pipeline.Error},
	} {
		t.Run(tc.name+"/mutating", func(t *testing.T) {
			calls := 0
			c := &admission.Chain{Mutating: []admission.MutatingPlugin{labeler{"a", "b"}, refuse{"Refuse", tc.err}, noop{&calls}}}
			recs, err := c.Admit(context.Background(), podAttrs("alice", &corev1.Pod{}))
			if err != tc.err || calls != 0 || len(recs) != 2 {
				t.Fatalf("err %v, later plugin calls %d, records %d", err, calls, len(recs))
			}
			if r := recs[1]; r.Plugin != "Refuse" || r.Decision != tc.decision || r.Reason != tc.err.Error() {
				t.Fatalf("refusal record %+v", r)
			}
		})
		t.Run(tc.name+"/validating", func(t *testing.T) {
			calls := 0
			c := &admission.Chain{Validating: []admission.ValidatingPlugin{noop{&calls}, refuse{"Refuse", tc.err}, noop{&calls}}}
			recs, err := c.Validate(context.Background(), podAttrs("alice", &corev1.Pod{}))
			if err != tc.err || calls != 1 || len(recs) != 2 {
				t.Fatalf("err %v, calls %d, records %d", err, calls, len(recs))
			}
			if recs[0].Stage != pipeline.StageValidatingAdmission || recs[0].Decision != pipeline.Allow || recs[1].Decision != tc.decision {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

func TestChainWithoutObject(t *testing.T) {
	calls := 0
	c := &admission.Chain{Mutating: []admission.MutatingPlugin{noop{&calls}}}
	a := &pipeline.Attributes{Verb: "delete", Operation: pipeline.Delete, IsResourceRequest: true, Resource: "pods", Namespace: "a", Name: "x"}
	recs, err := c.Admit(context.Background(), a)
	if err != nil || len(recs) != 1 || recs[0].Decision != pipeline.Allow || calls != 1 {
		t.Fatalf("records %+v, err %v", recs, err)
	}
}

func TestNewForbiddenNamesTheObject(t *testing.T) {
	cause := errors.New("no")
	for _, tc := range []struct {
		name string
		a    *pipeline.Attributes
		want string
	}{
		{"OK/name from URL", &pipeline.Attributes{Resource: "pods", Name: "web"}, `pods "web" is forbidden: no`},
		{"OK/name from object", podAttrs("a", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}), `pods "web" is forbidden: no`},
		{"OK/generateName", podAttrs("a", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}), `pods "web-" is forbidden: no`},
		{"OK/unknown", &pipeline.Attributes{Resource: "pods"}, `pods "Unknown" is forbidden: no`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := admission.NewForbidden(tc.a, cause)
			if !apierrors.IsForbidden(err) || err.Error() != tc.want {
				t.Fatalf("got %v", err)
			}
		})
	}
}

type rewrite struct{}

func (rewrite) Name() string { return "Rewrite" }
func (rewrite) Admit(_ context.Context, a *pipeline.Attributes) error {
	pod := a.Object.(*corev1.Pod)
	delete(pod.Labels, "drop")
	pod.Labels["kubelab.io/stage"] = "two"
	pod.Spec.Containers[0].Image = "nginx:1.27"
	return nil
}

func TestPatchEscapesAndRemoves(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"drop": "x", "kubelab.io/stage": "one"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.26"}}}}
	recs, err := (&admission.Chain{Mutating: []admission.MutatingPlugin{rewrite{}}}).Admit(context.Background(), podAttrs("a", pod))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"remove","path":"/metadata/labels/drop"},{"op":"replace","path":"/metadata/labels/kubelab.io~1stage","value":"two"},` +
		`{"op":"replace","path":"/spec/containers/0/image","value":"nginx:1.27"}]`
	if got := string(recs[0].Patch); got != want {
		t.Fatalf("patch\n got %s\nwant %s", got, want)
	}
}
