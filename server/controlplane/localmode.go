package controlplane

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelab/kubelab/server/frontdoor"
)

// ensureLocalModeBinding makes the binding that makes a local kubelab
// behave like a kind cluster for whoever runs it, as kubelab's own core
// does (frontdoor.LocalModeBinding): kubectl sends no credentials to a
// plain-HTTP server, so its requests arrive anonymous, and this ordinary
// binding, which a student can read, makes anonymous cluster-admin. Only
// requests through kubelab's front door can be anonymous (frontdoor.go).
func ensureLocalModeBinding(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, frontdoor.NewLocalModeBinding(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
