package kubeapi_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/apitest"
)

// TestImmutableFieldsAreRefused: what kube-apiserver will not let an update
// change is refused with 422 and kube's message, and nothing is written.
func TestImmutableFieldsAreRefused(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	cs := lab.Clientset(t)
	ctx := context.Background()
	const ns = "internals-demo"
	yes := true
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Data: map[string]string{"a": "1"}, Immutable: &yes}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, message string
		update        func() error
	}{
		{"ErrPodContainerAdded", "pod updates may not change fields other than `spec.containers[*].image`", func() error {
			p, _ := cs.CoreV1().Pods(ns).Get(ctx, "ssa-demo", metav1.GetOptions{})
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
			_, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
			return err
		}},
		{"ErrPodRestartPolicy", "spec: Forbidden: pod updates may not change fields", func() error {
			p, _ := cs.CoreV1().Pods(ns).Get(ctx, "web-86d8686cfb-84dk9", metav1.GetOptions{})
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			_, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
			return err
		}},
		{"ErrConfigMapImmutableData", "data: Forbidden: field is immutable when `immutable` is set", func() error {
			cm, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, "frozen", metav1.GetOptions{})
			cm.Data["a"] = "2"
			_, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}},
		{"ErrSecretType", "type: Invalid value: \"kubernetes.io/tls\": field is immutable", func() error {
			s, _ := cs.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
			s.Type = corev1.SecretTypeTLS
			_, err := cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
			return err
		}},
		{"ErrRoleRef", "roleRef: Invalid value", func() error {
			rb, _ := cs.RbacV1().RoleBindings(ns).Get(ctx, "rb", metav1.GetOptions{})
			rb.RoleRef.Name = "cluster-admin"
			_, err := cs.RbacV1().RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := lab.EtcdClient().Get(ctx, "/registry/", clientv3Prefix()...)
			err := tc.update()
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("got %v, want 422 with %q", err, tc.message)
			}
			after, _ := lab.EtcdClient().Get(ctx, "/registry/", clientv3Prefix()...)
			if after.Header.Revision != before.Header.Revision {
				t.Fatal("a refused update wrote to etcd")
			}
		})
	}
	t.Run("OKPodImageChanges", func(t *testing.T) {
		p, _ := cs.CoreV1().Pods(ns).Get(ctx, "ssa-demo", metav1.GetOptions{})
		p.Spec.Containers[0].Image = "nginx:1.28"
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
