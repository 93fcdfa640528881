package garbagecollector_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/controller/garbagecollector"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/storage"
)

const ns = "internals-demo"

// collectorUser is who the collector acts as, as the server runs it.
var collectorUser = registry.Controller("generic-garbage-collector")

// student is who the tests' own requests act as.
var student = pipeline.User{Name: "student", Groups: []string{pipeline.AllAuthenticated}}

// deletedBy is who sent the successful deletes of the configmap name.
func deletedBy(tr *registrytest.Traces, name string) []string {
	var users []string
	for _, t := range tr.All() {
		if t.Verb == "delete" && t.Resource == "configmaps" && t.Namespace == ns && t.Name == name && t.Code < 300 {
			users = append(users, t.User)
		}
	}
	return users
}

// lab is the collector alone over a registry of the built-in kinds on a
// real etcd, as the server wires it, with the test's client acting as a
// student through the registry.
type lab struct {
	configMaps *registry.Store
	ctx        context.Context
	traces     *registrytest.Traces
}

// start runs the collector as the server does (same constructor, stores,
// resolver and identity) until the test ends. The pipeline only records
// traces: with one set, a call that names no user is refused, so the
// collector must act as its own identity. Once the test's cleanups have
// run (collector, registry, etcd), no goroutine the test started may be
// left.
func start(t *testing.T) *lab {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// They wind down on their own time, longer than goleak's own
		// half second of retries on a loaded machine.
		eventually.Holds(t, "every goroutine of the test ending", func() (bool, error) {
			leaked := goleak.Find(before)
			return leaked == nil, leaked
		})
	})
	reg := registrytest.Start(t)
	tr := registrytest.Traced(reg)
	gc := garbagecollector.New(garbagecollector.Config{Stores: reg.Stores, Resolve: garbagecollector.ServedBy(reg),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	// The server stops the registry once Run has returned: nothing of the
	// collector (its loop, its informers) may still be using it then.
	registrytest.Run(t, collectorUser, gc.Run, "github.com/kubelab/kubelab/controller/garbagecollector")
	return &lab{configMaps: registrytest.Core(t, reg, "configmaps"), ctx: registry.WithUser(context.Background(), student), traces: tr}
}

func owned(name string, owner *corev1.ConfigMap, block bool, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}}}}
}

func configMap(name string, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
}

func key(name string) storage.Key { return storage.Key{Namespace: ns, Name: name} }

func (l *lab) create(t *testing.T, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out, err := l.configMaps.Create(l.ctx, cm, registry.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.ConfigMap)
}

func (l *lab) get(name string) (*corev1.ConfigMap, error) {
	obj, err := l.configMaps.Get(l.ctx, key(name), "")
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ConfigMap), nil
}

func (l *lab) update(t *testing.T, cm *corev1.ConfigMap) error {
	t.Helper()
	_, err := l.configMaps.Update(l.ctx, key(cm.Name), registry.DefaultUpdatedObjectInfo(cm), registry.UpdateOptions{FieldManager: "kubectl-edit"})
	return err
}

func (l *lab) gone(t *testing.T, name string) {
	t.Helper()
	eventually.Holds(t, name+" deleted", func() (bool, error) {
		_, err := l.get(name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// del deletes name as the student with policy (nil: the default,
// background) and says whether it went at once.
func (l *lab) del(t *testing.T, name string, policy *metav1.DeletionPropagation) bool {
	t.Helper()
	_, deleted, err := l.configMaps.Delete(l.ctx, key(name), registry.DeleteOptions{PropagationPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	return deleted
}

// goneByCollector: name is gone, deleted by the collector and no one else.
func (l *lab) goneByCollector(t *testing.T, name string) {
	t.Helper()
	l.gone(t, name)
	// The trace is published once the delete has returned, a moment after
	// the object has gone.
	eventually.Holds(t, name+"'s deletion traced", func() (bool, error) { return len(deletedBy(l.traces, name)) > 0, nil })
	if by := deletedBy(l.traces, name); !slices.Equal(by, []string{collectorUser.Name}) {
		t.Errorf("%s deleted by %q, want by the collector alone (%s)", name, by, collectorUser.Name)
	}
}

func policy(p metav1.DeletionPropagation) *metav1.DeletionPropagation { return &p }

// TestBackgroundDeletion: deleting an owner deletes its dependents
// afterwards; a dependent whose owner never existed goes too, and one with
// a live owner stays.
func TestBackgroundDeletion(t *testing.T) {
	l := start(t)
	owner := l.create(t, configMap("owner"))
	l.create(t, owned("child", owner, false))
	l.create(t, owned("dangling", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never", UID: types.UID("no-such-uid")}}, false))
	// A reference to a live object of the same name but another UID is a
	// reference to an owner that is gone.
	l.create(t, owned("stale", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: types.UID("an-older-owner")}}, false))
	l.goneByCollector(t, "dangling")
	l.goneByCollector(t, "stale")
	if _, err := l.get("child"); err != nil {
		t.Fatalf("a dependent of a live owner: %v", err)
	}
	if !l.del(t, "owner", policy(metav1.DeletePropagationBackground)) {
		t.Error("background deletion only marked the owner")
	}
	if _, err := l.get("owner"); !apierrors.IsNotFound(err) {
		t.Fatalf("background deletion keeps the owner: %v", err)
	}
	l.goneByCollector(t, "child")
}

// TestOrphanDeletion: the owner goes, its dependents stay without the
// reference to it.
func TestOrphanDeletion(t *testing.T) {
	l := start(t)
	owner := l.create(t, configMap("owner"))
	l.create(t, owned("child", owner, true))
	l.del(t, "owner", policy(metav1.DeletePropagationOrphan))
	l.gone(t, "owner")
	eventually.Holds(t, "child orphaned", func() (bool, error) {
		cm, err := l.get("child")
		return err == nil && len(cm.OwnerReferences) == 0, err
	})
	time.Sleep(500 * time.Millisecond) // the collector has had its chance to get it wrong
	if _, err := l.get("child"); err != nil {
		t.Fatalf("an orphan was deleted: %v", err)
	}
}

// TestForegroundDeletion: the owner stays, marked, until every dependent
// that blocks it has gone; a finalizer on a dependent holds both.
func TestForegroundDeletion(t *testing.T) {
	l := start(t)
	owner := l.create(t, configMap("owner"))
	l.create(t, owned("held", owner, true, "example.com/hold"))
	l.create(t, owned("free", owner, true))
	if l.del(t, "owner", policy(metav1.DeletePropagationForeground)) {
		t.Fatal("foreground deletion deleted the owner at once")
	}
	l.goneByCollector(t, "free")
	// The collector deletes it in the foreground too, then, as it has no
	// dependents, removes the foregroundDeletion finalizer that added:
	// only the test's own is left to hold it.
	var held *corev1.ConfigMap
	eventually.Holds(t, "the held dependent marked for deletion, held by its own finalizer alone", func() (bool, error) {
		cm, err := l.get("held")
		held = cm
		return err == nil && cm.DeletionTimestamp != nil && slices.Equal(cm.Finalizers, []string{"example.com/hold"}), err
	})
	o, err := l.get("owner")
	if err != nil || o.DeletionTimestamp == nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("owner while a blocking dependent remains: %v %+v", err, o)
	}
	held.Finalizers = nil
	if err := l.update(t, held); err != nil {
		t.Fatal(err)
	}
	l.gone(t, "held")
	l.gone(t, "owner")
}

// TestFinalizerHoldsAnObject: a delete only marks an object with a
// finalizer; removing the finalizer completes the deletion.
func TestFinalizerHoldsAnObject(t *testing.T) {
	l := start(t)
	l.create(t, configMap("kept", "example.com/hold"))
	if l.del(t, "kept", nil) {
		t.Fatal("an object with a finalizer deleted at once")
	}
	cm, err := l.get("kept")
	if err != nil || cm.DeletionTimestamp == nil || cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("after delete: %v %+v", err, cm)
	}
	// No new finalizer may be added to an object being deleted.
	cm.Finalizers = append(cm.Finalizers, "example.com/another")
	if err := l.update(t, cm); !apierrors.IsInvalid(err) {
		t.Fatalf("adding a finalizer while deleting: %v", err)
	}
	cm.Finalizers = nil
	if err := l.update(t, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := l.get("kept"); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer went: %v", err)
	}
}
