package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	if r.TypeConverter != nil {
		tc = r.TypeConverter
	}
	newManager := func(sub string, reset map[fieldpath.APIVersion]fieldpath.Filter) (*managedfields.FieldManager, error) {
		if r.Custom {
			return managedfields.NewDefaultCRDFieldManager(tc, unstructuredConverter{}, defaulter{r}, unstructuredCreater{}, gvk, r.GroupVersion, sub, reset)
		}
		return managedfields.NewDefaultFieldManager(tc, Scheme, defaulter{r}, Scheme, gvk, r.GroupVersion, sub, reset)
	}
	main, err := newManager("", mainReset)
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", gvk, err)
	}
	fm := &fieldManagers{main: main}
	if r.HasStatus {
		if fm.status, err = newManager("status", statusReset); err != nil {
			return nil, fmt.Errorf("status field manager for %s: %w", gvk, err)
		}
	}
	return fm, nil
}

// unstructuredConverter converts a custom resource between versions by
// relabelling it, as kube-apiserver's "None" conversion strategy does;
// every version of a CRD shares one schema-less shape.
type unstructuredConverter struct{}

func (unstructuredConverter) Convert(in, out, _ any) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (unstructuredConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok {
		return nil, fmt.Errorf("%v is not suitable for converting to %v", gvk, target)
	}
	out := in.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(to)
	return out, nil
}

func (unstructuredConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// unstructuredCreater makes empty custom resources of a kind.
type unstructuredCreater struct{}

func (unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

func (f *fieldManagers) forSubresource(sub string) *managedfields.FieldManager {
	if sub == "status" && f.status != nil {
		return f.status
	}
	return f.main
}
