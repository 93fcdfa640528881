package registry

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
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
	if err := AddBuiltinGroupVersions(s); err != nil {
		panic(err)
	}
	for _, add := range []func(*runtime.Scheme) error{metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme, apidiscoveryv2.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}
