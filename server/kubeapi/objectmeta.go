package kubeapi

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func resourceVersionOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// partialMetadata is obj's metadata alone, as the metadata-only client reads it.
func partialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	m, _ := meta.Accessor(obj)
	return meta.AsPartialObjectMetadata(m)
}
