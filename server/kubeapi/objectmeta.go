package kubeapi

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
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

// generateName appends five random characters to a generateName prefix,
// from apimachinery's alphabet without vowels, as kube's name generator does.
func generateName(prefix string) string {
	const maxName, suffix = 63, 5
	if len(prefix) > maxName-suffix {
		prefix = prefix[:maxName-suffix]
	}
	return prefix + utilrand.String(suffix)
}

func equalJSON(a, b map[string]any) bool { return reflect.DeepEqual(a, b) }
