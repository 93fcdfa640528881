package registry

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/kubelab/kubelab/storage"
)

// CreateOptions are the parts of metav1.CreateOptions a create takes.
type CreateOptions struct {
	DryRun bool
	// FieldManager records who set the object's fields in managedFields.
	FieldManager string
}

// Create stores a new object: server-owned metadata and defaults set, its
// managedFields recorded, admitted and validated. From the REST handler,
// an object naming another namespace than the request's is refused.
func (s *Store) Create(ctx context.Context, obj runtime.Object, opts CreateOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	o, err := s.begin(ctx, "create", "", storage.Key{Namespace: m.GetNamespace()}, opts.DryRun)
	if err != nil {
		return nil, err
	}
	created, err := s.create(o, obj, opts.FieldManager)
	return created, o.finish(err)
}

func (s *Store) create(o *op, obj runtime.Object, manager string) (runtime.Object, error) {
	if err := s.beginCreate(o, obj); err != nil {
		return nil, err
	}
	obj, err := s.fields.main.Update(s.Resource.New(), obj, manager)
	if err != nil {
		return nil, err
	}
	if err := o.admitAndValidate(s, obj, nil); err != nil {
		return nil, err
	}
	return s.storeCreate(o, obj)
}

// storeCreate writes a prepared object, or with dryRun only pretends to.
func (s *Store) storeCreate(o *op, obj runtime.Object) (runtime.Object, error) {
	call := o.storing()
	if o.dryRun {
		call.done(rvOf(obj), nil)
		return obj, nil
	}
	created, err := s.storage.Create(o.ctx, keyOf(obj), obj)
	call.done(rvOf(created), err)
	return created, err
}

// beginCreate sets what the server owns on a new object (a generated
// name, the system fields, generation) and applies the kind's
// PrepareForCreate and defaults, as kube's rest.BeforeCreate does;
// admission and validation come after.
func (s *Store) beginCreate(o *op, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if err := s.checkNamespace(o, m); err != nil {
		return err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(names.SimpleNameGenerator.GenerateName(m.GetGenerateName()))
	}
	FillObjectMetaSystemFields(m)
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(0)
	if s.Resource.TracksGeneration() {
		m.SetGeneration(1)
	}
	m.SetSelfLink("")
	if s.Resource.PrepareForCreate != nil {
		s.Resource.PrepareForCreate(obj)
	}
	if s.Resource.Default != nil {
		s.Resource.Default(obj)
	}
	return nil
}

// FillObjectMetaSystemFields sets a new object's uid and creation time,
// as kube's rest.FillObjectMetaSystemFields: the one place they are set.
func FillObjectMetaSystemFields(m metav1.Object) {
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
}

// checkNamespace fills the namespace from the request and refuses an
// object that names another one.
func (s *Store) checkNamespace(o *op, m metav1.Object) error {
	if !s.Resource.Namespaced {
		m.SetNamespace("")
		return nil
	}
	want := m.GetNamespace()
	if o.attrs != nil {
		want = o.attrs.Namespace
	}
	switch m.GetNamespace() {
	case "":
		m.SetNamespace(want)
	case want:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetNamespace() == "" {
		return apierrors.NewBadRequest("the namespace of the object must be given")
	}
	return nil
}
