// Package serviceaccount is the service-account controller: every active
// namespace has a ServiceAccount named "default", created with the
// namespace and made again if someone deletes it, as kube-controller-
// manager's controller of that name does.
package serviceaccount

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// Default is the name of the account every namespace gets.
const Default = "default"

// New watches namespaces and service accounts, and keeps the default
// account in each active namespace.
func New(namespaces, accounts *registry.Store, log *slog.Logger) *controller.PerNamespace {
	return controller.NewPerNamespace("serviceaccount", namespaces, accounts, Default, func(ctx context.Context, namespace string) error {
		key := storage.Key{Namespace: namespace, Name: Default}
		if _, err := accounts.Get(ctx, key, ""); !apierrors.IsNotFound(err) {
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Default, Namespace: namespace}}
		_, err := accounts.Create(ctx, sa, registry.CreateOptions{FieldManager: controller.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, log)
}
