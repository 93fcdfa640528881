package registry

import (
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kubelab/kubelab/storage"
)

// BuiltinGroupVersion is a built-in API group version whose kinds kubelab
// knows: its name and how to add its kinds to a scheme.
type BuiltinGroupVersion struct {
	GroupVersion schema.GroupVersion
	AddToScheme  func(*runtime.Scheme) error
}

// BuiltinGroupVersions is the one list of the built-in group versions
// kubelab serves (CustomResourceDefinitions and APIServices included).
// The registry's Scheme and the OpenAPI scheme are built from it, and a
// test holds it, the resources' rows and the OpenAPI generator's inputs
// (server/openapi/generate.sh, a shell script) to one another.
var BuiltinGroupVersions = []BuiltinGroupVersion{
	{corev1.SchemeGroupVersion, corev1.AddToScheme},
	{admissionregistrationv1.SchemeGroupVersion, admissionregistrationv1.AddToScheme},
	{apiextensionsv1.SchemeGroupVersion, apiextensionsv1.AddToScheme},
	{apiregistrationv1.SchemeGroupVersion, apiregistrationv1.AddToScheme},
	{appsv1.SchemeGroupVersion, appsv1.AddToScheme},
	{authenticationv1.SchemeGroupVersion, authenticationv1.AddToScheme},
	{authorizationv1.SchemeGroupVersion, authorizationv1.AddToScheme},
	{autoscalingv1.SchemeGroupVersion, autoscalingv1.AddToScheme},
	{autoscalingv2.SchemeGroupVersion, autoscalingv2.AddToScheme},
	{batchv1.SchemeGroupVersion, batchv1.AddToScheme},
	{certificatesv1.SchemeGroupVersion, certificatesv1.AddToScheme},
	{coordinationv1.SchemeGroupVersion, coordinationv1.AddToScheme},
	{discoveryv1.SchemeGroupVersion, discoveryv1.AddToScheme},
	{eventsv1.SchemeGroupVersion, eventsv1.AddToScheme},
	{networkingv1.SchemeGroupVersion, networkingv1.AddToScheme},
	{nodev1.SchemeGroupVersion, nodev1.AddToScheme},
	{policyv1.SchemeGroupVersion, policyv1.AddToScheme},
	{rbacv1.SchemeGroupVersion, rbacv1.AddToScheme},
	{schedulingv1.SchemeGroupVersion, schedulingv1.AddToScheme},
	{storagev1.SchemeGroupVersion, storagev1.AddToScheme},
}

// AddBuiltinGroupVersions adds the kinds of every built-in group version to s.
func AddBuiltinGroupVersions(s *runtime.Scheme) error {
	for _, gv := range BuiltinGroupVersions {
		if err := gv.AddToScheme(s); err != nil {
			return fmt.Errorf("adding %s to a scheme: %w", gv.GroupVersion, err)
		}
	}
	return nil
}

// groupResources are the rest of the built-in API groups a conformant
// server serves (the Discovery and AggregatedDiscovery conformance specs
// look for one resource of each). kubelab stores and serves them like any
// other kind, with no controller behind them: a Job runs nothing, a CSR is
// never signed, a webhook configuration calls no webhook.
func groupResources() []*Resource {
	stored := func(gv schema.GroupVersion, name, singular, kind string, namespaced, status bool, newObj, newList func() runtime.Object, short ...string) *Resource {
		return &Resource{
			GroupVersion: gv, Name: name, SingularName: singular, Kind: kind, Namespaced: namespaced,
			Verbs: readWrite, ShortNames: short, HasStatus: status, New: newObj, NewList: newList,
		}
	}
	return []*Resource{
		stored(admissionregistrationv1.SchemeGroupVersion, "validatingwebhookconfigurations", "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false, false,
			func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }),
		stored(admissionregistrationv1.SchemeGroupVersion, "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false, false,
			func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }),
		stored(coordinationv1.SchemeGroupVersion, "leases", "lease", "Lease", true, false,
			func() runtime.Object { return &coordinationv1.Lease{} }, func() runtime.Object { return &coordinationv1.LeaseList{} }),
		// autoscaling/v2 is the storage version; v1 reads and writes the
		// same objects, converted.
		stored(autoscalingv2.SchemeGroupVersion, "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, true,
			func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} }, "hpa"),
		withStorageVersion(stored(autoscalingv1.SchemeGroupVersion, "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, true,
			func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
			func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} }, "hpa"),
			autoscalingv2.SchemeGroupVersion, func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} }, hpaV1ToV2, hpaV2ToV1),
		stored(batchv1.SchemeGroupVersion, "jobs", "job", "Job", true, true,
			func() runtime.Object { return &batchv1.Job{} }, func() runtime.Object { return &batchv1.JobList{} }),
		stored(batchv1.SchemeGroupVersion, "cronjobs", "cronjob", "CronJob", true, true,
			func() runtime.Object { return &batchv1.CronJob{} }, func() runtime.Object { return &batchv1.CronJobList{} }, "cj"),
		stored(certificatesv1.SchemeGroupVersion, "certificatesigningrequests", "certificatesigningrequest", "CertificateSigningRequest", false, true,
			func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} }, "csr"),
		stored(discoveryv1.SchemeGroupVersion, "endpointslices", "endpointslice", "EndpointSlice", true, false,
			func() runtime.Object { return &discoveryv1.EndpointSlice{} }, func() runtime.Object { return &discoveryv1.EndpointSliceList{} }),
		// events.k8s.io events are core events seen through another
		// version, stored under the same key as kube-apiserver stores them.
		withStorageVersion(stored(eventsv1.SchemeGroupVersion, "events", "event", "Event", true, false,
			func() runtime.Object { return &eventsv1.Event{} }, func() runtime.Object { return &eventsv1.EventList{} }, "ev"),
			coreV1, func() runtime.Object { return &corev1.Event{} }, eventToCore, eventFromCore),
		stored(networkingv1.SchemeGroupVersion, "ingresses", "ingress", "Ingress", true, true,
			func() runtime.Object { return &networkingv1.Ingress{} }, func() runtime.Object { return &networkingv1.IngressList{} }, "ing"),
		stored(networkingv1.SchemeGroupVersion, "ingressclasses", "ingressclass", "IngressClass", false, false,
			func() runtime.Object { return &networkingv1.IngressClass{} }, func() runtime.Object { return &networkingv1.IngressClassList{} }),
		stored(networkingv1.SchemeGroupVersion, "networkpolicies", "networkpolicy", "NetworkPolicy", true, false,
			func() runtime.Object { return &networkingv1.NetworkPolicy{} }, func() runtime.Object { return &networkingv1.NetworkPolicyList{} }, "netpol"),
		stored(nodev1.SchemeGroupVersion, "runtimeclasses", "runtimeclass", "RuntimeClass", false, false,
			func() runtime.Object { return &nodev1.RuntimeClass{} }, func() runtime.Object { return &nodev1.RuntimeClassList{} }),
		stored(policyv1.SchemeGroupVersion, "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true, true,
			func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
			func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} }, "pdb"),
		stored(schedulingv1.SchemeGroupVersion, "priorityclasses", "priorityclass", "PriorityClass", false, false,
			func() runtime.Object { return &schedulingv1.PriorityClass{} }, func() runtime.Object { return &schedulingv1.PriorityClassList{} }, "pc"),
		stored(storagev1.SchemeGroupVersion, "csinodes", "csinode", "CSINode", false, false,
			func() runtime.Object { return &storagev1.CSINode{} }, func() runtime.Object { return &storagev1.CSINodeList{} }),
		stored(storagev1.SchemeGroupVersion, "storageclasses", "storageclass", "StorageClass", false, false,
			func() runtime.Object { return &storagev1.StorageClass{} }, func() runtime.Object { return &storagev1.StorageClassList{} }, "sc"),
	}
}

// withStorageVersion makes r keep its objects as another version's (the
// one kube-apiserver stores them in), converting on the way in and out.
func withStorageVersion[S, T runtime.Object](r *Resource, gv schema.GroupVersion, newStored func() runtime.Object, toStored func(T) S, fromStored func(S) T) *Resource {
	r.Codec = &convertingCodec{
		gv:        gv,
		stored:    storage.NewProtobufCodec(Scheme, gv),
		newStored: newStored,
		to:        func(obj runtime.Object) runtime.Object { return toStored(obj.(T)) },
		from:      func(obj runtime.Object) runtime.Object { return fromStored(obj.(S)) },
	}
	return r
}

// StorageGroupVersion is the group version r's objects are kept in etcd
// as: r's own, unless r is stored as another version of its kind.
func (r *Resource) StorageGroupVersion() schema.GroupVersion {
	if c, ok := r.Codec.(*convertingCodec); ok {
		return c.gv
	}
	if r.Custom && r.StorageVersion != "" {
		return schema.GroupVersion{Group: r.GroupVersion.Group, Version: r.StorageVersion}
	}
	return r.GroupVersion
}

// convertingCodec stores objects as another version of their kind.
type convertingCodec struct {
	gv        schema.GroupVersion
	stored    storage.Codec
	newStored func() runtime.Object
	to, from  func(runtime.Object) runtime.Object
}

func (c *convertingCodec) Encode(obj runtime.Object) ([]byte, error) {
	return c.stored.Encode(c.to(obj))
}

func (c *convertingCodec) Decode(data []byte, into runtime.Object) error {
	s := c.newStored()
	if err := c.stored.Decode(data, s); err != nil {
		return err
	}
	out := reflect.ValueOf(c.from(s))
	// into is a pointer to the served version's struct: fill it in place.
	dst := reflect.ValueOf(into)
	if dst.Kind() != reflect.Pointer || dst.Type() != out.Type() {
		return fmt.Errorf("cannot decode a %s into a %T", out.Type(), into)
	}
	dst.Elem().Set(out.Elem())
	return nil
}
