package kubeapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/registry"
)

// Scheme and Codecs are the registry's: every kind kubelab serves, and
// the meta.k8s.io kinds responses are made of.
var (
	Scheme = registry.Scheme
	Codecs = registry.Codecs
)

// metaGV is meta.k8s.io/v1, home of Table and PartialObjectMetadata.
var metaGV = schema.GroupVersion{Group: metav1.GroupName, Version: "v1"}
