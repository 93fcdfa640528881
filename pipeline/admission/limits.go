package admission

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
)

// RequireLimitsLabel, set to "true" on a namespace, makes RequireLimits
// refuse pods in it whose containers do not all set CPU and memory limits.
const RequireLimitsLabel = "kubelab.io/require-limits"

// RequireLimits is the lab's own validating plugin, there to be seen
// working: label a namespace and watch a pod without limits be refused at
// the validating-admission stage, after it was mutated and validated.
type RequireLimits struct {
	Namespaces NamespaceGetter
}

var _ ValidatingPlugin = (*RequireLimits)(nil)

// Name implements ValidatingPlugin.
func (*RequireLimits) Name() string { return "RequireLimits" }

// Validate implements ValidatingPlugin.
func (p *RequireLimits) Validate(ctx context.Context, a *pipeline.Attributes) error {
	if a.Operation != pipeline.Create || a.APIGroup != "" || a.Resource != "pods" || a.Subresource != "" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	ns, err := p.Namespaces.GetNamespace(ctx, a.Namespace)
	switch {
	case apierrors.IsNotFound(err):
		return nil // NamespaceLifecycle has refused it already
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	if ns.Labels[RequireLimitsLabel] != "true" {
		return nil
	}
	var problems []string
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			var missing []string
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Limits[r]; !ok {
					missing = append(missing, "resources.limits."+string(r))
				}
			}
			if len(missing) > 0 {
				problems = append(problems, fmt.Sprintf("container %q must set %s", c.Name, strings.Join(missing, " and ")))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return NewForbidden(a, fmt.Errorf("namespace %q requires resource limits (label %s=true): %s",
		a.Namespace, RequireLimitsLabel, strings.Join(problems, "; ")))
}
