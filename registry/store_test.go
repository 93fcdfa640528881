package registry_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/storage"
)

// last is the latest trace published, or none.
func last(tr *registrytest.Traces) pipeline.Trace {
	all := tr.All()
	if len(all) == 0 {
		return pipeline.Trace{}
	}
	return all[len(all)-1]
}

// denyUser lets everyone but one user do everything.
type denyUser string

func (d denyUser) Authorize(a *pipeline.Attributes) (bool, string) {
	if a.User.Name == string(d) {
		return false, ""
	}
	return true, "allowed"
}

const mallory = "mallory"

// fixture is a registry of the built-in kinds over a real embedded etcd,
// with a pipeline that authorizes (denying mallory) and records traces.
func fixture(t *testing.T) (*registry.Registry, *registrytest.Traces) {
	t.Helper()
	reg := registrytest.Start(t)
	tr := &registrytest.Traces{}
	reg.SetPipeline(&pipeline.Pipeline{Authz: denyUser(mallory), Traces: tr})
	return reg, tr
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "client-chosen"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

var controllerUser = registry.Controller("test-controller")

func TestCreate(t *testing.T) {
	reg, tr := fixture(t)
	pods := registrytest.Core(t, reg, "pods")
	ctx := registry.WithUser(context.Background(), controllerUser)

	t.Run("OK", func(t *testing.T) {
		obj, err := pods.Create(ctx, newPod("p"), registry.CreateOptions{FieldManager: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		pod := obj.(*corev1.Pod)
		if pod.UID == "" || pod.UID == "client-chosen" || pod.CreationTimestamp.IsZero() || pod.ResourceVersion == "" {
			t.Errorf("system fields: uid %q, created %v, rv %q: want the server's", pod.UID, pod.CreationTimestamp, pod.ResourceVersion)
		}
		if pod.Generation != 1 || pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Status.Phase != corev1.PodPending {
			t.Errorf("generation %d, restartPolicy %q, phase %q: want 1, Always (defaulted), Pending (prepared)", pod.Generation, pod.Spec.RestartPolicy, pod.Status.Phase)
		}
		if len(pod.ManagedFields) != 1 || pod.ManagedFields[0].Manager != "tester" || pod.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("managedFields %+v: want one Update by tester", pod.ManagedFields)
		}
		got := last(tr)
		if got.User != controllerUser.Name || got.Verb != "create" || got.Code != http.StatusCreated || got.Path != "/api/v1/namespaces/ns/pods" {
			t.Errorf("trace %+v: want the controller's create, 201, on the pods' path", got)
		}
		stored := got.Records[len(got.Records)-1]
		if stored.Stage != pipeline.StageStorage || stored.ResourceVersion != pod.ResourceVersion {
			t.Errorf("last record %+v: want the storage stage at rv %s", stored, pod.ResourceVersion)
		}
	})
	t.Run("ErrNoIdentity", func(t *testing.T) {
		_, err := pods.Create(context.Background(), newPod("nobody"), registry.CreateOptions{})
		if !apierrors.IsInternalError(err) {
			t.Fatalf("a create without a user: %v, want an internal error", err)
		}
		if _, err := pods.Get(ctx, storage.Key{Namespace: "ns", Name: "nobody"}, ""); !apierrors.IsNotFound(err) {
			t.Errorf("written anyway: %v", err)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		_, err := pods.Create(registry.WithUser(context.Background(), pipeline.User{Name: mallory}), newPod("m"), registry.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("mallory's create: %v, want Forbidden", err)
		}
		got := last(tr)
		if got.User != mallory || got.Code != http.StatusForbidden || !slices.ContainsFunc(got.Records, func(r pipeline.Record) bool {
			return r.Stage == pipeline.StageAuthorization && r.Decision == pipeline.Deny
		}) {
			t.Errorf("trace %+v: want mallory's denied create", got)
		}
		if _, err := pods.Get(ctx, storage.Key{Namespace: "ns", Name: "m"}, ""); !apierrors.IsNotFound(err) {
			t.Errorf("written anyway: %v", err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		bad := newPod("Not_A_Name")
		if _, err := pods.Create(ctx, bad, registry.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("an invalid name: %v, want Invalid", err)
		}
	})
}

func TestReadsAreNotTraced(t *testing.T) {
	reg, tr := fixture(t)
	pods := registrytest.Core(t, reg, "pods")
	ctx := registry.WithUser(context.Background(), controllerUser)
	if _, err := pods.Create(ctx, newPod("p"), registry.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := len(tr.All())
	if _, err := pods.Get(ctx, storage.Key{Namespace: "ns", Name: "p"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.List(ctx, storage.ListOptions{Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.All()); n != before {
		t.Errorf("%d traces published by a get and a list, want none", n-before)
	}
	if _, err := pods.Get(registry.WithUser(context.Background(), pipeline.User{Name: mallory}), storage.Key{Namespace: "ns", Name: "p"}, ""); !apierrors.IsForbidden(err) {
		t.Errorf("mallory's get: %v, want Forbidden", err)
	}
}

func TestUpdate(t *testing.T) {
	reg, _ := fixture(t)
	cms := registrytest.Core(t, reg, "configmaps")
	ctx := registry.WithUser(context.Background(), controllerUser)
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"a": "1"}}, registry.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key{Namespace: "ns", Name: "cm"}
	setB := registry.UpdateFunc(func(_ context.Context, old runtime.Object) (runtime.Object, error) {
		cm := old.(*corev1.ConfigMap).DeepCopy()
		cm.Data["b"] = "2"
		cm.UID, cm.CreationTimestamp = "", metav1.Time{} // the server keeps its own
		return cm, nil
	})

	t.Run("DryRunWritesNothing", func(t *testing.T) {
		got, err := cms.Update(ctx, key, setB, registry.UpdateOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if got.(*corev1.ConfigMap).Data["b"] != "2" {
			t.Errorf("dry run answered %v, want the update", got.(*corev1.ConfigMap).Data)
		}
		stored, _ := cms.Get(ctx, key, "")
		if stored.(*corev1.ConfigMap).ResourceVersion != created.(*corev1.ConfigMap).ResourceVersion {
			t.Errorf("a dry run wrote: rv %s, was %s", stored.(*corev1.ConfigMap).ResourceVersion, created.(*corev1.ConfigMap).ResourceVersion)
		}
	})
	t.Run("OK", func(t *testing.T) {
		got, err := cms.Update(ctx, key, setB, registry.UpdateOptions{FieldManager: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		cm, was := got.(*corev1.ConfigMap), created.(*corev1.ConfigMap)
		if cm.Data["b"] != "2" || cm.UID != was.UID || !cm.CreationTimestamp.Equal(&was.CreationTimestamp) {
			t.Errorf("updated %+v: want b set, uid and creation time kept", cm.ObjectMeta)
		}
	})
	t.Run("ErrPrecondition", func(t *testing.T) {
		uid := was(created).GetUID() + "-other"
		_, err := cms.Update(ctx, key, setB, registry.UpdateOptions{Preconditions: &storage.Preconditions{UID: &uid}})
		if !apierrors.IsConflict(err) {
			t.Fatalf("update with another uid: %v, want Conflict", err)
		}
	})
}

func was(obj runtime.Object) metav1.Object { return obj.(metav1.Object) }

func TestDeleteHonoursFinalizers(t *testing.T) {
	reg, _ := fixture(t)
	cms := registrytest.Core(t, reg, "configmaps")
	ctx := registry.WithUser(context.Background(), controllerUser)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "ns", Finalizers: []string{"example.com/hold"}}}
	created, err := cms.Create(ctx, cm, registry.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key{Namespace: "ns", Name: "held"}
	obj, gone, err := cms.Delete(ctx, key, registry.DeleteOptions{})
	if err != nil || gone || obj.(*corev1.ConfigMap).DeletionTimestamp == nil {
		t.Fatalf("delete of a held object: gone %v, err %v: want it marked, not gone", gone, err)
	}
	if err := cms.RemoveFinalizer(ctx, key, was(created).GetUID(), "example.com/hold", "tester"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, key, ""); !apierrors.IsNotFound(err) {
		t.Errorf("after its last finalizer: %v, want NotFound", err)
	}
}

func TestBind(t *testing.T) {
	reg, _ := fixture(t)
	pods := registrytest.Core(t, reg, "pods")
	ctx := registry.WithUser(context.Background(), registry.Node("n1"))
	created, err := pods.Create(ctx, newPod("p"), registry.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key{Namespace: "ns", Name: "p"}
	bound, err := pods.Bind(ctx, key, was(created).GetUID(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if p := bound.(*corev1.Pod); p.Spec.NodeName != "n1" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != corev1.PodScheduled {
		t.Errorf("bound pod: node %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	if _, err := pods.Bind(ctx, key, was(created).GetUID(), "n2"); !apierrors.IsConflict(err) {
		t.Errorf("binding a bound pod elsewhere: %v, want Conflict", err)
	}
	// The pod's own update may not move it, as in kube.
	_, err = pods.Update(ctx, key, registry.UpdateFunc(func(_ context.Context, old runtime.Object) (runtime.Object, error) {
		p := old.(*corev1.Pod).DeepCopy()
		p.Spec.NodeName = "n2"
		return p, nil
	}), registry.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("moving a pod by update: %v, want Invalid", err)
	}
}
