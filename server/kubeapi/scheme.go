package kubeapi

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// metaGV is meta.k8s.io/v1, home of Table and PartialObjectMetadata.
var metaGV = schema.GroupVersion{Group: metav1.GroupName, Version: "v1"}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, authenticationv1.AddToScheme, authorizationv1.AddToScheme, metav1.AddMetaToScheme, apidiscoveryv2.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}
