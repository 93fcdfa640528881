package namespace_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/controller/namespace"
	"github.com/kubelab/kubelab/controller/serviceaccount"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/storage"
)

// user is who the test acts as, as a student's kubectl would.
var user = pipeline.User{Name: "student", Groups: []string{pipeline.AllAuthenticated}}

// lab is a registry with the namespace controller running as the server
// runs it, and the stores the tests act through.
type lab struct {
	ctx                                context.Context
	namespaces, configMaps, pods, accs *registry.Store
}

// start runs the namespace controller alone, built and identified as the
// server builds it, over a fresh registry whose admission is the server's
// NamespaceLifecycle plugin (what refuses creates in a Terminating
// namespace). withAccounts runs the service-account controller beside it.
func start(t *testing.T, withAccounts bool) lab {
	t.Helper()
	reg := registrytest.Start(t)
	l := lab{
		ctx:        registry.WithUser(context.Background(), user),
		namespaces: registrytest.Core(t, reg, "namespaces"),
		configMaps: registrytest.Core(t, reg, "configmaps"),
		pods:       registrytest.Core(t, reg, "pods"),
		accs:       registrytest.Core(t, reg, "serviceaccounts"),
	}
	admitNamespaceLifecycle(t, reg)
	registrytest.Run(t, registry.Controller("namespace-controller"), namespace.New(l.namespaces, reg.NamespacedStores, nil).Run,
		"github.com/kubelab/kubelab/controller/namespace")
	if withAccounts {
		registrytest.Run(t, registry.Controller("service-account-controller"), serviceaccount.New(l.namespaces, l.accs, nil).Run,
			"github.com/kubelab/kubelab/controller/serviceaccount")
	}
	return l
}

// admitNamespaceLifecycle sets a pipeline whose only stage is the
// NamespaceLifecycle plugin, over the namespace cache the server gives it.
func admitNamespaceLifecycle(t *testing.T, reg *registry.Registry) {
	t.Helper()
	nsStorage, ok := reg.Storage(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		t.Fatal("namespaces are not served")
	}
	cache := admission.NewNamespaceCache(nsStorage, nsStorage)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cache.Start(ctx)
	if err := cache.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	reg.SetPipeline(&pipeline.Pipeline{Admission: &admission.Chain{
		Mutating: []admission.MutatingPlugin{admission.NewNamespaceLifecycle(cache)},
	}})
}

func (l lab) get(store *registry.Store, ns, name string) (runtime.Object, error) {
	return store.Get(l.ctx, storage.Key{Namespace: ns, Name: name}, "")
}

func (l lab) namespace(t *testing.T, name string) *corev1.Namespace {
	t.Helper()
	obj, err := l.get(l.namespaces, "", name)
	if err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	return obj.(*corev1.Namespace)
}

func (l lab) create(t *testing.T, store *registry.Store, obj runtime.Object) runtime.Object {
	t.Helper()
	out, err := store.Create(l.ctx, obj, registry.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNamespaceDeletionGoesTerminatingThenEmptiesAndRemovesIt(t *testing.T) {
	l := start(t, true)

	// A second finalizer holds the namespace in Terminating, so what a
	// Terminating namespace does can be seen before it goes.
	ns := l.create(t, l.namespaces, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/hold"}},
	}).(*corev1.Namespace)
	eventually.Holds(t, "the default service account", func() (bool, error) {
		_, err := l.get(l.accs, "doomed", "default")
		return err == nil, err
	})
	l.create(t, l.configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "doomed"}})
	l.create(t, l.pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "doomed"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}})

	if _, _, err := l.namespaces.Delete(l.ctx, storage.Key{Name: "doomed"}, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := l.namespace(t, "doomed")
	if got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil || got.UID != ns.UID {
		t.Fatalf("phase %q, deletionTimestamp %v; want Terminating with a deletion timestamp", got.Status.Phase, got.DeletionTimestamp)
	}

	eventually.Holds(t, "the namespace emptied, its kubernetes finalizer removed", func() (bool, error) {
		obj, err := l.get(l.namespaces, "", "doomed")
		if err != nil {
			return false, err
		}
		f := obj.(*corev1.Namespace).Spec.Finalizers
		return len(f) == 1 && f[0] == "example.com/hold", nil
	})
	for _, content := range []struct {
		store *registry.Store
		name  string
	}{{l.configMaps, "cm"}, {l.pods, "p"}, {l.accs, "default"}} {
		if _, err := l.get(content.store, "doomed", content.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s of a Terminating namespace: got %v, want NotFound", content.store.Resource.Name, content.name, err)
		}
	}
	got = l.namespace(t, "doomed")
	conds := map[corev1.NamespaceConditionType]corev1.ConditionStatus{}
	for _, c := range got.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if conds[corev1.NamespaceContentRemaining] != corev1.ConditionFalse || conds[corev1.NamespaceDeletionContentFailure] != corev1.ConditionFalse {
		t.Errorf("conditions %v: want NamespaceContentRemaining and NamespaceDeletionContentFailure False", got.Status.Conditions)
	}

	// Nothing new may be created in it; the refusal says why.
	_, err := l.configMaps.Create(l.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "doomed"}}, registry.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Fatalf("create in a Terminating namespace: %v", err)
	}
	// The service-account controller must not bring "default" back either.
	time.Sleep(200 * time.Millisecond)
	if _, err := l.get(l.accs, "doomed", "default"); !apierrors.IsNotFound(err) {
		t.Fatalf("default service account in a Terminating namespace: %v", err)
	}

	// Once the last finalizer goes, so does the namespace: through
	// /finalize, as client-go's Finalize sends it.
	got.Spec.Finalizers = nil
	if _, err := l.namespaces.Update(l.ctx, storage.Key{Name: "doomed"}, registry.DefaultUpdatedObjectInfo(got),
		registry.UpdateOptions{Subresource: "finalize"}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	eventually.Holds(t, "the namespace removed", func() (bool, error) {
		_, err := l.get(l.namespaces, "", "doomed")
		return apierrors.IsNotFound(err), err
	})
}

// TestContentFinalizerHoldsTheNamespace: an object with a finalizer is
// only marked when its namespace empties; the namespace stays Terminating,
// says why in its conditions, and goes once the finalizer is removed.
func TestContentFinalizerHoldsTheNamespace(t *testing.T) {
	l := start(t, false)
	l.create(t, l.namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held"}})
	l.create(t, l.configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "held", Finalizers: []string{"example.com/hold"}}})
	if _, _, err := l.namespaces.Delete(l.ctx, storage.Key{Name: "held"}, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the namespace reporting the finalizer that holds it", func() (bool, error) {
		obj, err := l.get(l.namespaces, "", "held")
		if err != nil {
			return false, err
		}
		for _, c := range obj.(*corev1.Namespace).Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return strings.Contains(c.Message, "example.com/hold in 1 resource instances"), nil
			}
		}
		return false, nil
	})
	obj, err := l.get(l.configMaps, "held", "kept")
	if err != nil || obj.(*corev1.ConfigMap).DeletionTimestamp == nil {
		t.Fatalf("the held object: %v %+v", err, obj)
	}
	kept := obj.(*corev1.ConfigMap).DeepCopy()
	kept.Finalizers = nil
	if _, err := l.configMaps.Update(l.ctx, storage.Key{Namespace: "held", Name: "kept"}, registry.DefaultUpdatedObjectInfo(kept), registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the namespace gone", func() (bool, error) {
		_, err := l.get(l.namespaces, "", "held")
		return apierrors.IsNotFound(err), nil
	})
}
