package storage

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultAttrs is what every object can be selected by: its labels,
// metadata.name, and for namespaced kinds metadata.namespace.
func DefaultAttrs(namespaced bool) AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		f := fields.Set{"metadata.name": m.GetName()}
		if namespaced {
			f["metadata.namespace"] = m.GetNamespace()
		}
		return labels.Set(m.GetLabels()), f, nil
	}
}
