package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// defaultPod fills what kube-apiserver's defaulting fills in a pod, so the
// stored object (and its managedFields) look like a real cluster's.
func defaultPod(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if spec.Priority == nil {
		spec.Priority = ptr.To[int32](0)
	}
	if spec.PreemptionPolicy == nil {
		spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
}

func defaultContainer(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if image := c.Image[strings.LastIndex(c.Image, "/")+1:]; !strings.ContainsAny(image, ":@") || strings.HasSuffix(image, ":latest") {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
}

// preparePodForCreate: a new pod is Pending, whatever status the client sent.
func preparePodForCreate(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(pod)}
}

// qosClass is Guaranteed when every container limits and requests the same
// cpu and memory, BestEffort when none asks for anything, else Burstable.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range pod.Spec.Containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if hasReq || hasLim {
				any = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func validatePod(obj, old runtime.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	var errs field.ErrorList
	if old != nil {
		errs = validatePodUpdate(pod, old.(*corev1.Pod))
	}
	containers := field.NewPath("spec", "containers")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(containers, ""))
	}
	names := map[string]bool{}
	for i, c := range pod.Spec.Containers {
		p := containers.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.NameIsDNSLabel(c.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names[c.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names[c.Name] = true
		}
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	}
	return errs
}

func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	// Every namespace carries its own name as a label, as in kube-apiserver.
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// prepareNamespaceForCreate: a new namespace carries the "kubernetes"
// finalizer, which the namespace controller removes once it has emptied
// the namespace. As in kube's namespace strategy this is done on create
// only: an update that removes it (the controller's, through /finalize)
// must not get it back.
func prepareNamespaceForCreate(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if len(ns.Spec.Finalizers) == 0 {
		ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	}
}

func validateNamespace(obj, _ runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	var errs field.ErrorList
	for _, msg := range validation.NameIsDNSLabel(ns.Name, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), ns.Name, msg))
	}
	return errs
}

func defaultSecret(obj runtime.Object) {
	if s := obj.(*corev1.Secret); s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// mergeStringData moves a Secret's stringData into its data, as
// kube-apiserver does on every write (its conversion of a v1 Secret to the
// internal one, which has no stringData): stringData is write-only, a key
// in both takes the stringData value, and stringData is never stored, so
// never returned.
func mergeStringData(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
