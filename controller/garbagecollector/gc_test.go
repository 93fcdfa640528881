package garbagecollector_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

const ns = "internals-demo"

func owned(name string, owner *corev1.ConfigMap, block bool, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}}}}
}

func create(t *testing.T, cs kubernetes.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func get(cs kubernetes.Interface, name string) (*corev1.ConfigMap, error) {
	return cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func gone(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	eventually.Holds(t, name+" deleted", func() (bool, error) {
		_, err := get(cs, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func del(t *testing.T, cs kubernetes.Interface, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}

// TestBackgroundDeletion: deleting an owner deletes its dependents
// afterwards; a dependent whose owner never existed goes too, and one with
// a live owner stays.
func TestBackgroundDeletion(t *testing.T) {
	cs := kubelabtest.Start(t).Clientset(t)
	owner := create(t, cs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
	create(t, cs, owned("child", owner, false))
	create(t, cs, owned("dangling", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never", UID: types.UID("no-such-uid")}}, false))
	// A reference to a live object of the same name but another UID is a
	// reference to an owner that is gone.
	create(t, cs, owned("stale", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: types.UID("an-older-owner")}}, false))
	gone(t, cs, "dangling")
	gone(t, cs, "stale")
	if _, err := get(cs, "child"); err != nil {
		t.Fatalf("a dependent of a live owner: %v", err)
	}
	del(t, cs, "owner", metav1.DeletePropagationBackground)
	if _, err := get(cs, "owner"); !apierrors.IsNotFound(err) {
		t.Fatalf("background deletion keeps the owner: %v", err)
	}
	gone(t, cs, "child")
}

// TestOrphanDeletion: the owner goes, its dependents stay without the
// reference to it.
func TestOrphanDeletion(t *testing.T) {
	cs := kubelabtest.Start(t).Clientset(t)
	owner := create(t, cs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
	create(t, cs, owned("child", owner, true))
	del(t, cs, "owner", metav1.DeletePropagationOrphan)
	gone(t, cs, "owner")
	eventually.Holds(t, "child orphaned", func() (bool, error) {
		cm, err := get(cs, "child")
		return err == nil && len(cm.OwnerReferences) == 0, err
	})
	time.Sleep(500 * time.Millisecond) // the collector has had its chance to get it wrong
	if _, err := get(cs, "child"); err != nil {
		t.Fatalf("an orphan was deleted: %v", err)
	}
}

// TestForegroundDeletion: the owner stays, marked, until every dependent
// that blocks it has gone; a finalizer on a dependent holds both.
func TestForegroundDeletion(t *testing.T) {
	cs := kubelabtest.Start(t).Clientset(t)
	ctx := context.Background()
	owner := create(t, cs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
	create(t, cs, owned("held", owner, true, "example.com/hold"))
	create(t, cs, owned("free", owner, true))
	del(t, cs, "owner", metav1.DeletePropagationForeground)
	gone(t, cs, "free")
	var held *corev1.ConfigMap
	eventually.Holds(t, "the held dependent marked for deletion", func() (bool, error) {
		cm, err := get(cs, "held")
		held = cm
		return err == nil && cm.DeletionTimestamp != nil, err
	})
	o, err := get(cs, "owner")
	if err != nil || o.DeletionTimestamp == nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("owner while a blocking dependent remains: %v %+v", err, o)
	}
	held.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, cs, "held")
	gone(t, cs, "owner")
}

// TestFinalizerHoldsAnObject: a delete only marks an object with a
// finalizer; removing the finalizer completes the deletion.
func TestFinalizerHoldsAnObject(t *testing.T) {
	cs := kubelabtest.Start(t).Clientset(t)
	ctx := context.Background()
	create(t, cs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Finalizers: []string{"example.com/hold"}}})
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := get(cs, "kept")
	if err != nil || cm.DeletionTimestamp == nil || cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("after delete: %v %+v", err, cm)
	}
	// No new finalizer may be added to an object being deleted.
	cm.Finalizers = append(cm.Finalizers, "example.com/another")
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("adding a finalizer while deleting: %v", err)
	}
	cm.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := get(cs, "kept"); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer went: %v", err)
	}
}

func TestBadDeleteOptions(t *testing.T) {
	cs := kubelabtest.Start(t).Clientset(t)
	create(t, cs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}})
	bad := metav1.DeletionPropagation("Sideways")
	err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "cm", metav1.DeleteOptions{PropagationPolicy: &bad})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("unknown propagation policy: %v", err)
	}
	if _, err := get(cs, "cm"); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
}
