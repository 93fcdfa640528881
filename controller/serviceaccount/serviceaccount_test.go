package serviceaccount_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/controller/serviceaccount"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/storage"
)

// user is who the test acts as, as a student's kubectl would.
var user = pipeline.User{Name: "student", Groups: []string{pipeline.AllAuthenticated}}

func TestDeletedDefaultServiceAccountComesBack(t *testing.T) {
	reg := registrytest.Start(t)
	namespaces, accounts := registrytest.Core(t, reg, "namespaces"), registrytest.Core(t, reg, "serviceaccounts")
	registrytest.Run(t, registry.Controller("service-account-controller"), serviceaccount.New(namespaces, accounts, nil).Run,
		"github.com/kubelab/kubelab/controller", "github.com/kubelab/kubelab/controller/serviceaccount")
	ctx := registry.WithUser(context.Background(), user)
	key := storage.Key{Namespace: "internals-demo", Name: serviceaccount.Default}
	get := func() (*corev1.ServiceAccount, error) {
		obj, err := accounts.Get(ctx, key, "")
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.ServiceAccount), nil
	}

	if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "internals-demo"}}, registry.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first *corev1.ServiceAccount
	eventually.Holds(t, "default account in a new namespace", func() (bool, error) {
		sa, err := get()
		first = sa
		return err == nil, err
	})
	if _, _, err := accounts.Delete(ctx, key, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "a new default account", func() (bool, error) {
		sa, err := get()
		return err == nil && sa.UID != first.UID, err
	})
}
