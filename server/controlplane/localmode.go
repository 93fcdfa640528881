package controlplane

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
)

// LocalModeBinding makes a local kubelab behave like a kind cluster for
// whoever runs it, as kubelab's own core does: kubectl sends no
// credentials to a plain-HTTP server, so its requests arrive anonymous,
// and this ordinary binding, which a student can read, makes anonymous
// cluster-admin. Only requests through kubelab's front door can be
// anonymous (frontdoor.go).
const LocalModeBinding = "kubelab-local-mode"

func ensureLocalModeBinding(ctx context.Context, client kubernetes.Interface) error {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LocalModeBinding,
			Annotations: map[string]string{"kubelab.io/why": "local mode: kubectl sends no credentials over plain HTTP, so the local user arrives as system:anonymous and is made cluster-admin here, as on a kind cluster"},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: user.AllUnauthenticated}},
	}
	_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
