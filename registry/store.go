package registry

import (
	"context"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
)

// Store serves one resource, as k8s.io/apiserver's registry.Store does:
// every create, update, patch and delete of its objects, by a user or by
// kubelab itself, goes through it, and so through the resource's strategy
// and the pipeline's admission, validation and trace.
type Store struct {
	// Resource is the row the store serves, strategy included.
	Resource *Resource
	storage  Storage
	fields   *fieldManagers
	reg      *Registry
}

func (s *Store) stop() { s.storage.Stop() }

// GroupResource names the store's resource.
func (s *Store) GroupResource() schema.GroupResource { return s.Resource.GroupResource() }

// read authorizes a read by an in-process caller; the REST handler has
// authorized its own.
func (s *Store) read(ctx context.Context, verb string, k storage.Key) (*op, error) {
	return s.begin(ctx, verb, "", k, false)
}

// Get reads the object under k; resourceVersion as in kube's GET. The
// trace shows the read's storage stage, as it shows a write's.
func (s *Store) Get(ctx context.Context, k storage.Key, resourceVersion string) (runtime.Object, error) {
	o, err := s.read(ctx, "get", k)
	if err != nil {
		return nil, err
	}
	call := o.storing()
	obj, err := s.storage.Get(ctx, k, resourceVersion)
	call.done(rvOf(obj), err)
	return obj, o.finish(err)
}

// List reads the objects opts select, with its storage stage traced.
func (s *Store) List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error) {
	o, err := s.read(ctx, "list", storage.Key{Namespace: opts.Namespace})
	if err != nil {
		return nil, err
	}
	call := o.storing()
	list, err := s.storage.List(ctx, opts)
	rv := ""
	if list != nil && list.ResourceVersion > 0 {
		rv = strconv.FormatInt(list.ResourceVersion, 10)
	}
	call.done(rv, err)
	return list, o.finish(err)
}

// Watch starts a watch, from the watch cache unless the registry serves
// watches from etcd.
func (s *Store) Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error) {
	o, err := s.read(ctx, "watch", storage.Key{Namespace: opts.Namespace})
	if err != nil {
		return nil, err
	}
	w, err := s.storage.Watch(ctx, opts)
	// A watch's trace ends when it starts, as over HTTP once its headers
	// are sent.
	return observe(ctx, w, o.finish(err))
}

// SelectableFields are the fields a field selector may name.
func (s *Store) SelectableFields() fields.Set {
	_, f, err := s.Resource.attrs()(s.Resource.New())
	if err != nil {
		return fields.Set{}
	}
	return f
}

// validate checks metadata with apimachinery's rules and the kind's own;
// failures are one 422 Invalid listing every field at fault.
func (s *Store) validate(obj, old runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	r := s.Resource
	nameFn := validation.NameIsDNSSubdomain
	if r.ValidateName != nil {
		nameFn = r.ValidateName
	}
	errs := validation.ValidateObjectMetaAccessor(m, r.Namespaced, nameFn, field.NewPath("metadata"))
	if old != nil {
		oldMeta, _ := meta.Accessor(old)
		errs = append(errs, validation.ValidateObjectMetaAccessorUpdate(m, oldMeta, field.NewPath("metadata"))...)
	}
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj, old)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(r.GroupVersionKind().GroupKind(), m.GetName(), errs)
	}
	return nil
}

// toMap is obj as a map the caller may change: a custom resource's own
// map is copied, since it may be shared with the watch cache.
func toMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func keyOf(obj runtime.Object) storage.Key {
	m, err := meta.Accessor(obj)
	if err != nil {
		return storage.Key{}
	}
	return storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()}
}
