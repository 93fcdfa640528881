package frontdoor

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// LocalModeBinding is the ClusterRoleBinding that makes a local kubelab
// behave like a kind cluster for whoever runs it: kubectl sends no
// credentials to a plain-HTTP server, so its requests arrive anonymous, and
// this binding (an ordinary RBAC object a student can read) makes anonymous
// requests cluster-admin. A token's user is authorized by its own bindings.
const LocalModeBinding = "kubelab-local-mode"

// NewLocalModeBinding is the local-mode binding, as both cores make it.
func NewLocalModeBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LocalModeBinding,
			Annotations: map[string]string{"kubelab.io/why": "local mode: kubectl sends no credentials over plain HTTP, so the local user arrives as system:anonymous and is made cluster-admin here, as on a kind cluster"},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: pipeline.AllUnauthenticated}},
	}
}

// setLocalModeBinding creates the local-mode binding, or, for classroom
// mode, removes it: a data directory first used locally must not leave
// anonymous requests cluster-admin in a class. It writes as ctx's user.
func setLocalModeBinding(ctx context.Context, reg *registry.Registry, local bool) error {
	bindings, ok := reg.Store(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))
	if !ok {
		return errors.New("clusterrolebindings are not served")
	}
	if !local {
		_, _, err := bindings.Delete(ctx, storage.Key{Name: LocalModeBinding}, registry.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	_, err := bindings.Create(ctx, NewLocalModeBinding(), registry.CreateOptions{FieldManager: registry.APIServerFieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// creator is what RBAC's bootstrap needs to write its policy: a create
// of one resource through the registry, as ctx's user.
func creator(reg *registry.Registry, gvr schema.GroupVersionResource) rbac.Creator {
	return creatorFunc(func(ctx context.Context, _ storage.Key, obj runtime.Object) (runtime.Object, error) {
		store, ok := reg.Store(gvr)
		if !ok {
			return nil, fmt.Errorf("%s is not served", gvr)
		}
		return store.Create(ctx, obj, registry.CreateOptions{FieldManager: registry.APIServerFieldManager})
	})
}

type creatorFunc func(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error)

func (f creatorFunc) Create(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error) {
	return f(ctx, k, obj)
}
