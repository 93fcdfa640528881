package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// DefaultServiceAccount is the service account every namespace has and a
// pod runs as unless it names another.
const DefaultServiceAccount = "default"

// mirrorPodAnnotation marks a kubelet's static-pod mirror, which runs
// without a service account.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// ServiceAccount is the defaulting half of kube's plugin of that name: a
// new pod that names no service account runs as "default". (kube also
// mounts the account's token as a projected volume; kubelab runs no pods,
// so it does not.)
type ServiceAccount struct{}

var _ MutatingPlugin = ServiceAccount{}

// Name implements MutatingPlugin.
func (ServiceAccount) Name() string { return "ServiceAccount" }

// Admit implements MutatingPlugin.
func (ServiceAccount) Admit(_ context.Context, a *pipeline.Attributes) error {
	if a.Operation != pipeline.Create || a.APIGroup != "" || a.Resource != "pods" || a.Subresource != "" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || pod.Annotations[mirrorPodAnnotation] != "" {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	// v1 pods carry the name twice; kube's conversion keeps them equal.
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	return nil
}
