package labhttp_test

import (
	"context"
	"maps"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server/labhttp"
)

// Reset puts the student's namespace back as kubelab made it: what the
// labs created is gone, the lesson's pods are back as they were, and the
// namespace, its default ServiceAccount and the student's RoleBinding
// stay. Another student's namespace is untouched.
func TestResetRestoresTheNamespace(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice, bob := student(t, lab, "alice"), student(t, lab, "bob")
	ns := alice.name
	for _, args := range [][]string{
		{"-n", ns, "run", "lab-pod", "--image=nginx:1.27"},
		{"-n", ns, "create", "configmap", "extra", "--from-literal=a=b"},
		{"-n", ns, "label", "pod", "ssa-demo", "demo-round=one"},
		{"-n", ns, "delete", "pod", "web-86d8686cfb-84dk9"},
		{"-n", bob.name, "run", "bobs-pod", "--image=nginx:1.27"},
	} {
		who := alice
		if args[1] == bob.name {
			who = bob
		}
		if _, stderr, err := who.kubectl(args...); err != nil {
			t.Fatalf("kubectl %v: %v %s", args, err, stderr)
		}
	}
	nsBefore := get(t, lab, func(ctx context.Context) (metav1.Object, error) {
		return lab.Clientset(t).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	})

	resp, body := alice.post(labhttp.APIPath+"/reset", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: HTTP %d: %s", resp.StatusCode, body)
	}

	ctx := context.Background()
	cs := lab.Clientset(t)
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "lab-pod", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lab-pod: %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap extra: %v, want NotFound", err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 6 {
		t.Errorf("%d pods after reset, want the lesson's 6", len(pods.Items))
	}
	ssa, err := cs.CoreV1().Pods(ns).Get(ctx, "ssa-demo", metav1.GetOptions{})
	if err != nil || !maps.Equal(ssa.Labels, map[string]string{"app": "ssa-demo"}) {
		t.Errorf("ssa-demo: %v labels %v", err, ssa.Labels)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "web-86d8686cfb-84dk9", metav1.GetOptions{}); err != nil {
		t.Errorf("web pod not back: %v", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("default ServiceAccount: %v", err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Get(ctx, "kubelab-student", metav1.GetOptions{}); err != nil {
		t.Errorf("RoleBinding: %v", err)
	}
	nsAfter, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || nsAfter.UID != nsBefore.GetUID() {
		t.Errorf("namespace: %v, uid %s, was %s", err, nsAfter.UID, nsBefore.GetUID())
	}
	if _, err := cs.CoreV1().Pods(bob.name).Get(ctx, "bobs-pod", metav1.GetOptions{}); err != nil {
		t.Errorf("bob's pod: %v", err)
	}
	// And alice can still work there.
	if _, stderr, err := alice.kubectl("-n", ns, "get", "pods"); err != nil {
		t.Errorf("after reset: %v %s", err, stderr)
	}
}

func get(t *testing.T, _ *kubelabtest.Lab, f func(context.Context) (metav1.Object, error)) metav1.Object {
	t.Helper()
	o, err := f(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return o
}
