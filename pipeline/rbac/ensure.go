package rbac

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubelab/kubelab/storage"
)

// Creator creates an object if none exists under its key; *etcd3.Store is one.
type Creator interface {
	Create(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error)
}

// EnsureBootstrapPolicy writes each default ClusterRole and
// ClusterRoleBinding that does not exist yet, as kube-apiserver does at
// start; ones that exist are left alone, so an instructor's edits survive
// a restart. Aggregated roles are written with their aggregated rules, as
// kube's aggregation controller would leave them (the authorizer
// aggregates live anyway).
func EnsureBootstrapPolicy(ctx context.Context, clusterRoles, clusterRoleBindings Creator) error {
	roles := BootstrapClusterRoles()
	aggregated := AggregatedRules(roles)
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, r := range roles {
		if rules, ok := aggregated[r.Name]; ok {
			r.Rules = rules
		}
		if err := createIfMissing(ctx, clusterRoles, r, now); err != nil {
			return err
		}
	}
	for _, b := range BootstrapClusterRoleBindings() {
		if err := createIfMissing(ctx, clusterRoleBindings, b, now); err != nil {
			return err
		}
	}
	return nil
}

func createIfMissing(ctx context.Context, c Creator, obj interface {
	runtime.Object
	metav1.Object
}, now metav1.Time) error {
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(now)
	_, err := c.Create(ctx, storage.Key{Name: obj.GetName()}, obj)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bootstrap policy %s: %w", obj.GetName(), err)
	}
	return nil
}
