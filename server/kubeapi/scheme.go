package kubeapi

import (
	corev1 "k8s.io/api/core/v1"
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

// coreV1 is the core group's version, in which Status errors are written.
var coreV1 = corev1.SchemeGroupVersion

// metaGV is meta.k8s.io/v1, home of Table and PartialObjectMetadata.
var metaGV = schema.GroupVersion{Group: metav1.GroupName, Version: "v1"}
