package kubeapi

import (
	"crypto/rand"
	"math/big"
	"reflect"

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

func partialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	m, _ := meta.Accessor(obj)
	pom := &metav1.PartialObjectMetadata{ObjectMeta: *metaOf(m)}
	return pom
}

// nameSuffixAlphabet avoids vowels and look-alikes, as kube's name generator does.
const nameSuffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// generateName appends five random characters to a generateName prefix.
func generateName(prefix string) string {
	const maxName, suffix = 63, 5
	if len(prefix) > maxName-suffix {
		prefix = prefix[:maxName-suffix]
	}
	b := []byte(prefix)
	for range suffix {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(nameSuffixAlphabet))))
		b = append(b, nameSuffixAlphabet[n.Int64()])
	}
	return string(b)
}

func equalJSON(a, b map[string]any) bool { return reflect.DeepEqual(a, b) }
