package kubeapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldManagers track managedFields for a resource and its status
// subresource, as kube-apiserver's do: each write records its manager and
// the fields it set; server-side apply merges by those records.
type fieldManagers struct {
	main, status *managedfields.FieldManager
}

// defaulter lets the field manager default objects the way the resource does.
type defaulter struct{ res *Resource }

func (d defaulter) Default(obj runtime.Object) {
	if d.res.Default != nil {
		d.res.Default(obj)
	}
}

func newFieldManagers(tc managedfields.TypeConverter, r *Resource) (*fieldManagers, error) {
	gvk := r.GroupVersionKind()
	var mainReset, statusReset map[fieldpath.APIVersion]fieldpath.Filter
	if r.HasStatus {
		// Apply to the main resource cannot set status, and to /status cannot set spec.
		v := fieldpath.APIVersion(r.GroupVersion.String())
		mainReset = map[fieldpath.APIVersion]fieldpath.Filter{v: fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))}
		statusReset = map[fieldpath.APIVersion]fieldpath.Filter{v: fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("spec")))}
	}
	main, err := managedfields.NewDefaultFieldManager(tc, Scheme, defaulter{r}, Scheme, gvk, r.GroupVersion, "", mainReset)
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", gvk, err)
	}
	fm := &fieldManagers{main: main}
	if r.HasStatus {
		if fm.status, err = managedfields.NewDefaultFieldManager(tc, Scheme, defaulter{r}, Scheme, gvk, r.GroupVersion, "status", statusReset); err != nil {
			return nil, fmt.Errorf("status field manager for %s: %w", gvk, err)
		}
	}
	return fm, nil
}

func (f *fieldManagers) forSubresource(sub string) *managedfields.FieldManager {
	if sub == "status" {
		return f.status
	}
	return f.main
}

// managerName is the fieldManager query parameter or, as in kube-apiserver,
// the user agent's program name ("kubectl" of "kubectl/v1.37.2 ...").
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	name, _, _ := strings.Cut(userAgent, "/")
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}
