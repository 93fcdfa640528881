package registry

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Scheme knows every built-in kind kubelab serves (CustomResourceDefinition
// and APIService included), plus meta.k8s.io's
// Table, PartialObjectMetadata and Status, and aggregated discovery's
// APIGroupDiscoveryList, which responses are made of.
var Scheme = newScheme()

// Codecs encode and decode every kind in Scheme as JSON, YAML and protobuf.
var Codecs = serializer.NewCodecFactory(Scheme)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, authorizationv1.AddToScheme, metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme, apidiscoveryv2.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme,
		admissionregistrationv1.AddToScheme, authenticationv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme, certificatesv1.AddToScheme,
		coordinationv1.AddToScheme, discoveryv1.AddToScheme, eventsv1.AddToScheme, networkingv1.AddToScheme, nodev1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme, storagev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}
