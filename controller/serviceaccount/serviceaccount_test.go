package serviceaccount_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

func TestDeletedDefaultServiceAccountComesBack(t *testing.T) {
	lab := kubelabtest.Start(t)
	cs := lab.Clientset(t)
	ctx := context.Background()
	var first *corev1.ServiceAccount
	eventually.Holds(t, "default account in the demo namespace", func() (bool, error) {
		sa, err := cs.CoreV1().ServiceAccounts("internals-demo").Get(ctx, "default", metav1.GetOptions{})
		first = sa
		return err == nil, err
	})
	if err := cs.CoreV1().ServiceAccounts("internals-demo").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "a new default account", func() (bool, error) {
		sa, err := cs.CoreV1().ServiceAccounts("internals-demo").Get(ctx, "default", metav1.GetOptions{})
		return err == nil && sa.UID != first.UID, err
	})
}
