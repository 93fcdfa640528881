package registry

import (
	"crypto/sha256"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var appsV1 = appsv1.SchemeGroupVersion

// workloadResources are the kinds the Kubernetes e2e tests and kubectl's
// everyday commands touch beyond pods: stored and served like any other,
// with kube's defaults and validation of selectors, but no controllers
// (nothing turns a Deployment into pods here).
func workloadResources() []*Resource {
	return []*Resource{
		{
			GroupVersion: coreV1, Name: "podtemplates", SingularName: "podtemplate", Kind: "PodTemplate", Namespaced: true,
			Verbs: readWrite,
			New:   func() runtime.Object { return &corev1.PodTemplate{} }, NewList: func() runtime.Object { return &corev1.PodTemplateList{} },
			Default: func(obj runtime.Object) { defaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec) },
		},
		{
			GroupVersion: coreV1, Name: "replicationcontrollers", SingularName: "replicationcontroller", Kind: "ReplicationController", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"rc"}, Categories: []string{"all"}, HasStatus: true,
			New: func() runtime.Object { return &corev1.ReplicationController{} }, NewList: func() runtime.Object { return &corev1.ReplicationControllerList{} },
			Default: defaultReplicationController, Validate: validateReplicationController,
		},
		{
			GroupVersion: coreV1, Name: "services", SingularName: "service", Kind: "Service", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"svc"}, Categories: []string{"all"}, HasStatus: true,
			New: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} },
			PrepareForCreate: allocateClusterIP, Default: defaultService, Validate: validateService,
		},
		{
			GroupVersion: appsV1, Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"deploy"}, Categories: []string{"all"}, HasStatus: true,
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			Default: defaultDeployment, Validate: func(obj, _ runtime.Object) field.ErrorList {
				d := obj.(*appsv1.Deployment)
				return validateSelector(d.Spec.Selector, d.Spec.Template.Labels)
			},
		},
		{
			GroupVersion: appsV1, Name: "replicasets", SingularName: "replicaset", Kind: "ReplicaSet", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"rs"}, Categories: []string{"all"}, HasStatus: true,
			New: func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			Default: func(obj runtime.Object) {
				rs := obj.(*appsv1.ReplicaSet)
				if rs.Spec.Replicas == nil {
					rs.Spec.Replicas = ptr.To[int32](1)
				}
				defaultPodSpec(&rs.Spec.Template.Spec)
			},
			Validate: func(obj, _ runtime.Object) field.ErrorList {
				rs := obj.(*appsv1.ReplicaSet)
				return validateSelector(rs.Spec.Selector, rs.Spec.Template.Labels)
			},
		},
	}
}

// defaultPodSpec is a pod's defaulting, for the templates of workloads.
func defaultPodSpec(spec *corev1.PodSpec) {
	pod := &corev1.Pod{Spec: *spec}
	defaultPod(pod)
	*spec = pod.Spec
}

func defaultReplicationController(obj runtime.Object) {
	rc := obj.(*corev1.ReplicationController)
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	// v1's defaulting: a missing selector is the template's labels.
	if len(rc.Spec.Selector) == 0 && rc.Spec.Template != nil {
		rc.Spec.Selector = rc.Spec.Template.Labels
	}
	if rc.Spec.Template != nil {
		defaultPodSpec(&rc.Spec.Template.Spec)
	}
}

func validateReplicationController(obj, _ runtime.Object) field.ErrorList {
	rc := obj.(*corev1.ReplicationController)
	spec := field.NewPath("spec")
	if len(rc.Spec.Selector) == 0 {
		return field.ErrorList{field.Required(spec.Child("selector"), "")}
	}
	if rc.Spec.Template == nil {
		return field.ErrorList{field.Required(spec.Child("template"), "")}
	}
	if !labels.SelectorFromSet(rc.Spec.Selector).Matches(labels.Set(rc.Spec.Template.Labels)) {
		return field.ErrorList{field.Invalid(spec.Child("template", "metadata", "labels"), rc.Spec.Template.Labels, "`selector` does not match template `labels`")}
	}
	return nil
}

// validateSelector is apps/v1's rule: a selector is required, not empty,
// and matches the pod template's labels.
func validateSelector(sel *metav1.LabelSelector, templateLabels map[string]string) field.ErrorList {
	spec := field.NewPath("spec")
	if sel == nil {
		return field.ErrorList{field.Required(spec.Child("selector"), "")}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return field.ErrorList{field.Invalid(spec.Child("selector"), sel, err.Error())}
	}
	if s.Empty() {
		return field.ErrorList{field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for deployment")}
	}
	if !s.Matches(labels.Set(templateLabels)) {
		return field.ErrorList{field.Invalid(spec.Child("template", "metadata", "labels"), templateLabels, "`selector` does not match template `labels`")}
	}
	return nil
}

func defaultDeployment(obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate == nil {
		quarter := intstr.FromString("25%")
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: &quarter}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	defaultPodSpec(&d.Spec.Template.Spec)
}

func defaultService(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	spec := &svc.Spec
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		if spec.InternalTrafficPolicy == nil {
			spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}
		if spec.IPFamilyPolicy == nil {
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

// allocateClusterIP gives a new ClusterIP service an address in kube's
// default service range, 10.96.0.0/12, derived from its namespace and
// name: a lab has few services, and no proxy routes to them anyway.
func allocateClusterIP(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	svc.Status = corev1.ServiceStatus{}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP != "" {
		if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return
	}
	sum := sha256.Sum256([]byte(svc.Namespace + "/" + svc.Name))
	ip := fmt.Sprintf("10.%d.%d.%d", 96+int(sum[0]%16), sum[1], 1+int(sum[2])%254)
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
}

func validateService(obj, old runtime.Object) field.ErrorList {
	svc := obj.(*corev1.Service)
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if svc.Spec.Type != corev1.ServiceTypeExternalName && len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		errs = append(errs, field.Required(spec.Child("ports"), ""))
	}
	for i, p := range svc.Spec.Ports {
		if p.Port < 1 || p.Port > 65535 {
			errs = append(errs, field.Invalid(spec.Child("ports").Index(i).Child("port"), p.Port, "must be between 1 and 65535, inclusive"))
		}
	}
	if old != nil {
		if prev := old.(*corev1.Service); prev.Spec.ClusterIP != "" && svc.Spec.ClusterIP != prev.Spec.ClusterIP {
			errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(0), svc.Spec.ClusterIP, "may not change once set"))
		}
	}
	return errs
}
