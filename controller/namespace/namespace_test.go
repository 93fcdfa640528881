package namespace_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

func TestNamespaceDeletionGoesTerminatingThenEmptiesAndRemovesIt(t *testing.T) {
	lab := kubelabtest.Start(t)
	cs := lab.Clientset(t)
	ctx := context.Background()

	// A second finalizer holds the namespace in Terminating, so what a
	// Terminating namespace does can be seen before it goes.
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/hold"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the default service account", func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("doomed").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	if _, err := cs.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := cs.CoreV1().Pods("doomed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("right after delete the namespace should still be there, Terminating: %v", err)
	}
	if got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil || got.UID != ns.UID {
		t.Fatalf("phase %q, deletionTimestamp %v; want Terminating with a deletion timestamp", got.Status.Phase, got.DeletionTimestamp)
	}

	eventually.Holds(t, "the namespace emptied, its kubernetes finalizer removed", func() (bool, error) {
		got, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(got.Spec.Finalizers) == 1 && got.Spec.Finalizers[0] == "example.com/hold", nil
	})
	for _, check := range []func() error{
		func() error {
			_, err := cs.CoreV1().ConfigMaps("doomed").Get(ctx, "cm", metav1.GetOptions{})
			return err
		},
		func() error { _, err := cs.CoreV1().Pods("doomed").Get(ctx, "p", metav1.GetOptions{}); return err },
		func() error {
			_, err := cs.CoreV1().ServiceAccounts("doomed").Get(ctx, "default", metav1.GetOptions{})
			return err
		},
	} {
		if err := check(); !apierrors.IsNotFound(err) {
			t.Errorf("content of a Terminating namespace: got %v, want NotFound", err)
		}
	}
	got, _ = cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	conds := map[corev1.NamespaceConditionType]corev1.ConditionStatus{}
	for _, c := range got.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if conds[corev1.NamespaceContentRemaining] != corev1.ConditionFalse || conds[corev1.NamespaceDeletionContentFailure] != corev1.ConditionFalse {
		t.Errorf("conditions %v: want NamespaceContentRemaining and NamespaceDeletionContentFailure False", got.Status.Conditions)
	}

	// Nothing new may be created in it; the refusal says why.
	_, err = cs.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Fatalf("create in a Terminating namespace: %v", err)
	}
	// The service-account controller must not bring "default" back either.
	time.Sleep(200 * time.Millisecond)
	if _, err := cs.CoreV1().ServiceAccounts("doomed").Get(ctx, "default", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("default service account in a Terminating namespace: %v", err)
	}

	// Once the last finalizer goes, so does the namespace.
	got.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	eventually.Holds(t, "the namespace removed", func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// TestContentFinalizerHoldsTheNamespace: an object with a finalizer is
// only marked when its namespace empties; the namespace stays Terminating,
// says why in its conditions, and goes once the finalizer is removed.
func TestContentFinalizerHoldsTheNamespace(t *testing.T) {
	cs := kubelabtest.Start(t).Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Finalizers: []string{"example.com/hold"}}}
	if _, err := cs.CoreV1().ConfigMaps("held").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the namespace reporting the finalizer that holds it", func() (bool, error) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return strings.Contains(c.Message, "example.com/hold in 1 resource instances"), nil
			}
		}
		return false, nil
	})
	kept, err := cs.CoreV1().ConfigMaps("held").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || kept.DeletionTimestamp == nil {
		t.Fatalf("the held object: %v %+v", err, kept)
	}
	kept.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps("held").Update(ctx, kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the namespace gone", func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
