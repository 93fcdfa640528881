// Package serviceaccount is the service-account controller: every active
// namespace has a ServiceAccount named "default", created with the
// namespace and made again if someone deletes it, as kube-controller-
// manager's controller of that name does.
package serviceaccount

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// Default is the name of the account every namespace gets.
const Default = "default"

// Controller makes sure each active namespace has its default account.
type Controller struct {
	namespaces, accounts *etcd3.Store
	loop                 *controller.Loop
	feeds                []interface{ Run(context.Context) }
}

// New watches namespaces and service accounts.
func New(namespaces, accounts *etcd3.Store, log *slog.Logger) *Controller {
	c := &Controller{namespaces: namespaces, accounts: accounts}
	c.loop = controller.New("serviceaccount", c.sync, log)
	c.feeds = []interface{ Run(context.Context) }{
		controller.Feed("namespaces", namespaces, func(obj runtime.Object) (string, bool) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp == nil {
				return ns.Name, true
			}
			return "", false
		}, c.loop),
		controller.Feed("serviceaccounts", accounts, func(obj runtime.Object) (string, bool) {
			if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == Default {
				return sa.Namespace, true
			}
			return "", false
		}, c.loop),
	}
	return c
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	for _, f := range c.feeds {
		go f.Run(ctx)
	}
	c.loop.Run(ctx)
}

func (c *Controller) sync(ctx context.Context, namespace string) error {
	obj, err := c.namespaces.Get(ctx, storage.Key{Name: namespace}, "")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns := obj.(*corev1.Namespace); ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	key := storage.Key{Namespace: namespace, Name: Default}
	if _, err := c.accounts.Get(ctx, key, ""); !apierrors.IsNotFound(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: Default, Namespace: namespace, UID: uuid.NewUUID(),
		CreationTimestamp: metav1.NewTime(time.Now().Truncate(time.Second)),
	}}
	_, err = c.accounts.Create(ctx, key, sa)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
