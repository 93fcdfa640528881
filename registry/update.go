package registry

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/storage"
)

// UpdateOptions are the parts of metav1.UpdateOptions (and the URL) an
// update takes.
type UpdateOptions struct {
	DryRun bool
	// FieldManager records who set the object's fields in managedFields.
	FieldManager string
	// Subresource is "", "status" or, for a namespace, "finalize".
	Subresource string
	// Preconditions are checked against the stored object on every try.
	Preconditions *storage.Preconditions
}

// UpdatedObjectInfo computes an object's new state from its stored one,
// as kube's rest.UpdatedObjectInfo: called again, on fresh state, when
// another writer got there first. old must not be changed.
type UpdatedObjectInfo interface {
	UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error)
}

// UpdateFunc is an UpdatedObjectInfo made of a function.
type UpdateFunc func(ctx context.Context, old runtime.Object) (runtime.Object, error)

// UpdatedObject calls f.
func (f UpdateFunc) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	return f(ctx, old)
}

// DefaultUpdatedObjectInfo is a whole new object, as a PUT sends it.
func DefaultUpdatedObjectInfo(obj runtime.Object) UpdatedObjectInfo {
	return UpdateFunc(func(context.Context, runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
}

// Update writes the object objInfo makes of the stored one: the
// server-owned metadata kept, the strategy's preparation and defaults,
// admission, validation and managedFields; an object whose last
// finalizer the update removed is then deleted.
func (s *Store) Update(ctx context.Context, k storage.Key, objInfo UpdatedObjectInfo, opts UpdateOptions) (runtime.Object, error) {
	verb := "update"
	o, err := s.begin(ctx, verb, opts.Subresource, k, opts.DryRun)
	if err != nil {
		return nil, err
	}
	updated, err := s.update(o, k, opts, func(cur runtime.Object) (runtime.Object, error) {
		next, err := objInfo.UpdatedObject(ctx, cur)
		if err != nil {
			return nil, err
		}
		nm, err := meta.Accessor(next)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if err := s.checkNamespace(o, nm); err != nil {
			return nil, err
		}
		return s.beginUpdate(o, next, cur, opts.Subresource, opts.FieldManager, true)
	})
	return updated, o.finish(err)
}

// update runs tryUpdate on the stored object until it lands (or, with
// dryRun, once, writing nothing), records the storage stage and finishes
// a deletion the write released.
func (s *Store) update(o *op, k storage.Key, opts UpdateOptions, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	mark := o.mark()
	try := func(cur runtime.Object) (runtime.Object, error) {
		o.rewind(mark) // a retry on fresh state records its stages afresh
		return tryUpdate(cur)
	}
	var updated runtime.Object
	var err error
	call := o.storing()
	if o.dryRun {
		updated, err = s.dryRunUpdate(o.ctx, k, opts.Preconditions, try)
	} else {
		updated, err = s.storage.GuaranteedUpdate(o.ctx, k, opts.Preconditions, try)
		if err == nil {
			updated, err = s.finishDeletion(o.ctx, updated)
		}
	}
	call.done(rvOf(updated), err)
	return updated, err
}

// dryRunUpdate computes an update on the stored object and writes nothing.
func (s *Store) dryRunUpdate(ctx context.Context, k storage.Key, pre *storage.Preconditions, try func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	cur, err := s.storage.Get(ctx, k, "")
	if err != nil {
		return nil, err
	}
	if err := checkPreconditions(s.Resource, cur, pre); err != nil {
		return nil, err
	}
	return try(cur)
}

func checkPreconditions(r *Resource, cur runtime.Object, pre *storage.Preconditions) error {
	if pre == nil {
		return nil
	}
	m, err := meta.Accessor(cur)
	if err != nil {
		return err
	}
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(r.GroupResource(), m.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(r.GroupResource(), m.GetName(), fmt.Errorf("%s", storage.ConflictMessage))
	}
	return nil
}

// beginUpdate turns a client's new version of an object into what is
// stored, as kube's rest.BeforeUpdate: the server-owned metadata of cur
// kept, the status (or, for /status, everything but the status) kept,
// defaults, generation, admission and validation, and managedFields. A
// resourceVersion in next must be cur's.
func (s *Store) beginUpdate(o *op, next, cur runtime.Object, subresource, manager string, trackFields bool) (runtime.Object, error) {
	r := s.Resource
	nm, err := meta.Accessor(next)
	if err != nil {
		return nil, err
	}
	cm, _ := meta.Accessor(cur)
	if rv := nm.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return nil, apierrors.NewConflict(r.GroupResource(), cm.GetName(), fmt.Errorf("%s", storage.ConflictMessage))
	}
	if uid := nm.GetUID(); uid != "" && uid != cm.GetUID() {
		return nil, apierrors.NewConflict(r.GroupResource(), cm.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, cm.GetUID()))
	}
	nm.SetUID(cm.GetUID())
	nm.SetCreationTimestamp(cm.GetCreationTimestamp())
	nm.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(cm.GetGeneration())
	nm.SetResourceVersion(cm.GetResourceVersion())
	nm.SetNamespace(cm.GetNamespace())
	if r.HasStatus {
		next = s.keepSubresource(next, cur, subresource)
		nm, _ = meta.Accessor(next)
	}
	if r.PrepareForUpdate != nil {
		r.PrepareForUpdate(next, cur)
	}
	if r.Default != nil {
		r.Default(next)
	}
	if r.TracksGeneration() && specChanged(next, cur) {
		nm.SetGeneration(cm.GetGeneration() + 1)
	}
	if err := o.admitAndValidate(s, next, cur); err != nil {
		return nil, err
	}
	if trackFields {
		return s.fields.forSubresource(subresource).Update(cur, next, manager)
	}
	return next, nil
}

// keepSubresource: a write to the main resource cannot change the status,
// and a write to /status can change nothing but the status.
func (s *Store) keepSubresource(next, cur runtime.Object, subresource string) runtime.Object {
	nextU, err1 := toMap(next)
	curU, err2 := toMap(cur)
	if err1 != nil || err2 != nil {
		return next
	}
	merged := nextU
	switch st, ok := curU["status"]; {
	case subresource == "status":
		merged = curU
		merged["status"] = nextU["status"]
		// A built-in kind's status strategy keeps the rest of the stored
		// object but takes metadata from the write (a namespace's status
		// patch may set annotations); a custom resource's keeps old metadata.
		if _, custom := next.(*unstructured.Unstructured); !custom {
			merged["metadata"] = nextU["metadata"]
		}
	case subresource == "finalize":
		// A namespace's spec holds only its finalizers.
		merged = curU
		merged["spec"] = nextU["spec"]
	case ok:
		merged["status"] = st
	default:
		delete(merged, "status")
	}
	if _, ok := next.(*unstructured.Unstructured); ok {
		return &unstructured.Unstructured{Object: merged}
	}
	out := s.Resource.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(merged, out); err != nil {
		return next
	}
	return out
}

// specChanged reports a change outside metadata and status, which bumps
// metadata.generation as kube-apiserver does.
func specChanged(next, cur runtime.Object) bool {
	a, err1 := toMap(next)
	b, err2 := toMap(cur)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, m := range []map[string]any{a, b} {
		delete(m, "metadata")
		delete(m, "status")
	}
	return !reflect.DeepEqual(a, b)
}
