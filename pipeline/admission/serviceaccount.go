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

var (
	_ MutatingPlugin = ServiceAccount{}
	_ Describing     = ServiceAccount{}
)

// Name implements MutatingPlugin.
func (ServiceAccount) Name() string { return "ServiceAccount" }

// Admit implements MutatingPlugin.
func (sa ServiceAccount) Admit(ctx context.Context, a *pipeline.Attributes) error {
	_, err := sa.AdmitDescribed(ctx, a)
	return err
}

// AdmitDescribed implements Describing: the pod's two service-account
// fields, set where they were empty.
func (ServiceAccount) AdmitDescribed(_ context.Context, a *pipeline.Attributes) ([]PatchOp, error) {
	if a.Operation != pipeline.Create || a.APIGroup != "" || a.Resource != "pods" || a.Subresource != "" {
		return nil, nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || pod.Annotations[mirrorPodAnnotation] != "" {
		return nil, nil
	}
	name, deprecated := pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	// v1 pods carry the name twice; kube's conversion keeps them equal.
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	ops := setString(nil, "/spec/serviceAccount", deprecated, pod.Spec.DeprecatedServiceAccount)
	return setString(ops, "/spec/serviceAccountName", name, pod.Spec.ServiceAccountName), nil
}

// setString is the operation that turns an omitempty string field from
// before into after: none, an add, or a replace.
func setString(ops []PatchOp, path, before, after string) []PatchOp {
	switch {
	case before == after:
		return ops
	case before == "":
		return append(ops, PatchOp{Op: "add", Path: path, Value: after})
	case after == "":
		return append(ops, PatchOp{Op: "remove", Path: path})
	}
	return append(ops, PatchOp{Op: "replace", Path: path, Value: after})
}
