package admission

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// DefaultTolerationSeconds is kube's plugin of that name, on by default in
// kube-apiserver: a new pod that does not say how long to stay on a node
// that is not ready or unreachable tolerates each for 300 seconds. It is
// the mutation every `kubectl get pod -o yaml` shows and few students
// notice, so the pipeline view makes it visible.
type DefaultTolerationSeconds struct{}

// DefaultTolerationSecondsValue is kube's default, in seconds.
const DefaultTolerationSecondsValue int64 = 300

var (
	_ MutatingPlugin = DefaultTolerationSeconds{}
	_ Describing     = DefaultTolerationSeconds{}
)

// Name implements MutatingPlugin.
func (DefaultTolerationSeconds) Name() string { return "DefaultTolerationSeconds" }

// Admit implements MutatingPlugin.
func (d DefaultTolerationSeconds) Admit(ctx context.Context, a *pipeline.Attributes) error {
	_, err := d.AdmitDescribed(ctx, a)
	return err
}

// AdmitDescribed implements Describing.
func (DefaultTolerationSeconds) AdmitDescribed(_ context.Context, a *pipeline.Attributes) ([]PatchOp, error) {
	if a.Operation != pipeline.Create || a.APIGroup != "" || a.Resource != "pods" || a.Subresource != "" {
		return nil, nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var missing []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !toleratesNoExecute(pod.Spec.Tolerations, key) {
			seconds := DefaultTolerationSecondsValue
			missing = append(missing, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	var ops []PatchOp
	if len(pod.Spec.Tolerations) == 0 {
		ops = append(ops, PatchOp{Op: "add", Path: "/spec/tolerations", Value: missing})
	} else {
		for i, t := range missing {
			ops = append(ops, PatchOp{Op: "add", Path: "/spec/tolerations/" + strconv.Itoa(len(pod.Spec.Tolerations)+i), Value: t})
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, missing...)
	return ops, nil
}

// toleratesNoExecute: the pod already says what to do about the taint key
// with effect NoExecute (or any effect), so the plugin leaves it alone.
func toleratesNoExecute(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
			(t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			return true
		}
	}
	return false
}
