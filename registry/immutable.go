package registry

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The update rules below are kube-apiserver's, with its messages: what a
// kind does not let an update change.

// podSpecUpdateMessage is kube's own wording of what a pod update may change.
const podSpecUpdateMessage = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// validatePodUpdate: a pod's spec is fixed once created, but for the
// images, the active deadline and added tolerations.
func validatePodUpdate(pod, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return append(errs, field.Forbidden(field.NewPath("spec"), podSpecUpdateMessage))
	}
	mutable := old.Spec.DeepCopy()
	for i := range mutable.Containers {
		mutable.Containers[i].Image = pod.Spec.Containers[i].Image
	}
	for i := range mutable.InitContainers {
		mutable.InitContainers[i].Image = pod.Spec.InitContainers[i].Image
	}
	mutable.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	if len(pod.Spec.Tolerations) >= len(old.Spec.Tolerations) &&
		equality.Semantic.DeepEqual(pod.Spec.Tolerations[:len(old.Spec.Tolerations)], old.Spec.Tolerations) {
		mutable.Tolerations = pod.Spec.Tolerations
	}
	if !equality.Semantic.DeepEqual(*mutable, pod.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), podSpecUpdateMessage))
	}
	return errs
}

// validateConfigMap: an immutable ConfigMap's data cannot change, and it
// cannot become mutable again.
func validateConfigMap(obj, old runtime.Object) field.ErrorList {
	if old == nil {
		return nil
	}
	cm, prev := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	return immutableData(prev.Immutable, cm.Immutable,
		equality.Semantic.DeepEqual(cm.Data, prev.Data) && equality.Semantic.DeepEqual(cm.BinaryData, prev.BinaryData))
}

// validateSecret: a secret's type never changes; an immutable secret's
// data cannot either.
func validateSecret(obj, old runtime.Object) field.ErrorList {
	if old == nil {
		return nil
	}
	s, prev := obj.(*corev1.Secret), old.(*corev1.Secret)
	var errs field.ErrorList
	if s.Type != prev.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	return append(errs, immutableData(prev.Immutable, s.Immutable,
		equality.Semantic.DeepEqual(s.Data, prev.Data) && equality.Semantic.DeepEqual(s.StringData, prev.StringData))...)
}

func immutableData(was, is *bool, sameData bool) field.ErrorList {
	if was == nil || !*was {
		return nil
	}
	var errs field.ErrorList
	if is == nil || !*is {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	if !sameData {
		errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
	}
	return errs
}

// validateBinding: a (Cluster)RoleBinding's roleRef is fixed; to point a
// binding at another role, delete it and make a new one.
func validateBinding(obj, old runtime.Object) field.ErrorList {
	if old == nil {
		return nil
	}
	if roleRef(obj) != roleRef(old) {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), roleRef(obj), "cannot change roleRef")}
	}
	return nil
}

func roleRef(obj runtime.Object) rbacv1.RoleRef {
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		return b.RoleRef
	case *rbacv1.ClusterRoleBinding:
		return b.RoleRef
	}
	return rbacv1.RoleRef{}
}
