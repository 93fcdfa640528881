package kubeapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/deletion"
)

func (r *request) create() error {
	if r.res.Namespaced && r.info.Namespace == "" {
		return apierrors.NewBadRequest("the namespace of the object must be given in the URL")
	}
	obj, err := r.readObject()
	if err != nil {
		return err
	}
	if err := r.prepareCreate(obj); err != nil {
		return err
	}
	obj, err = r.fields.main.Update(r.res.New(), obj, r.manager())
	if err != nil {
		return err
	}
	if err := r.admitAndValidate(obj, nil); err != nil {
		return err
	}
	return r.storeCreate(obj)
}

// storeCreate writes a prepared object, or with dryRun only pretends to.
func (r *request) storeCreate(obj runtime.Object) error {
	if r.dryRun() {
		r.stored(obj, nil)
		return r.respond(http.StatusCreated, obj)
	}
	m, _ := meta.Accessor(obj)
	created, err := r.store.Create(r.ctx(), storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()}, obj)
	r.stored(created, err)
	if err != nil {
		return err
	}
	return r.respond(http.StatusCreated, created)
}

// prepareCreate sets what the server owns on a new object (uid, creation
// time, generation, a generated name) and applies defaults; admission and
// validation come after.
func (r *request) prepareCreate(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if err := r.checkNamespace(m); err != nil {
		return err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName()))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(0)
	if r.res.tracksGeneration() {
		m.SetGeneration(1)
	}
	m.SetSelfLink("")
	if r.res.PrepareForCreate != nil {
		r.res.PrepareForCreate(obj)
	}
	if r.res.Default != nil {
		r.res.Default(obj)
	}
	return nil
}

// checkNamespace fills the namespace from the URL and refuses a body that
// names another one.
func (r *request) checkNamespace(m metav1.Object) error {
	if !r.res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch m.GetNamespace() {
	case "":
		m.SetNamespace(r.info.Namespace)
	case r.info.Namespace:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// validate checks metadata with apimachinery's rules and the kind's own;
// failures are one 422 Invalid listing every field at fault.
func (r *request) validate(obj, old runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	nameFn := validation.NameIsDNSSubdomain
	if r.res.GroupVersion.Group == rbacV1.Group {
		nameFn = path.ValidatePathSegmentName
	}
	errs := validation.ValidateObjectMetaAccessor(m, r.res.Namespaced, nameFn, field.NewPath("metadata"))
	if old != nil {
		oldMeta, _ := meta.Accessor(old)
		errs = append(errs, validation.ValidateObjectMetaAccessorUpdate(m, oldMeta, field.NewPath("metadata"))...)
	}
	if r.res.Validate != nil {
		errs = append(errs, r.res.Validate(obj, old)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(r.res.GroupVersionKind().GroupKind(), m.GetName(), errs)
	}
	return nil
}

func (r *request) update() error {
	obj, err := r.readObject()
	if err != nil {
		return err
	}
	m, _ := meta.Accessor(obj)
	if m.GetName() != r.info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), r.info.Name))
	}
	if err := r.checkNamespace(m); err != nil {
		return err
	}
	mark := r.mark()
	updated, err := r.store.GuaranteedUpdate(r.ctx(), r.key(), nil, func(cur runtime.Object) (runtime.Object, error) {
		r.rewind(mark) // a retry on fresh state records its stages afresh
		next := obj.DeepCopyObject()
		return r.prepareUpdate(next, cur, true)
	})
	if err == nil && !r.dryRun() {
		updated, err = r.finishDeletion(updated)
	}
	r.stored(updated, err)
	if err != nil {
		return err
	}
	return r.respond(http.StatusOK, updated)
}

// prepareUpdate turns a client's new version of an object into what is
// stored: the server-owned metadata of cur kept, the status (or, for
// /status, everything but the status) kept, defaults, validation and
// managedFields. A resourceVersion in next must be cur's.
func (r *request) prepareUpdate(next, cur runtime.Object, trackFields bool) (runtime.Object, error) {
	nm, err := meta.Accessor(next)
	if err != nil {
		return nil, err
	}
	cm, _ := meta.Accessor(cur)
	if rv := nm.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return nil, apierrors.NewConflict(r.res.GroupResource(), cm.GetName(), fmt.Errorf("%s", storage.ConflictMessage))
	}
	if uid := nm.GetUID(); uid != "" && uid != cm.GetUID() {
		return nil, apierrors.NewConflict(r.res.GroupResource(), cm.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, cm.GetUID()))
	}
	nm.SetUID(cm.GetUID())
	nm.SetCreationTimestamp(cm.GetCreationTimestamp())
	nm.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(cm.GetGeneration())
	nm.SetResourceVersion(cm.GetResourceVersion())
	nm.SetNamespace(cm.GetNamespace())
	if r.res.HasStatus {
		next = r.keepSubresource(next, cur)
		nm, _ = meta.Accessor(next)
	}
	if r.res.PrepareForUpdate != nil {
		r.res.PrepareForUpdate(next, cur)
	}
	if r.res.Default != nil {
		r.res.Default(next)
	}
	if r.res.tracksGeneration() && specChanged(next, cur) {
		nm.SetGeneration(cm.GetGeneration() + 1)
	}
	if err := r.admitAndValidate(next, cur); err != nil {
		return nil, err
	}
	if trackFields {
		return r.fields.forSubresource(r.info.Subresource).Update(cur, next, r.manager())
	}
	return next, nil
}

// keepSubresource: a write to the main resource cannot change the status,
// and a write to /status can change nothing but the status.
func (r *request) keepSubresource(next, cur runtime.Object) runtime.Object {
	nextU, err1 := toMap(next)
	curU, err2 := toMap(cur)
	if err1 != nil || err2 != nil {
		return next
	}
	merged := nextU
	switch st, ok := curU["status"]; {
	case r.info.Subresource == "status":
		merged = curU
		merged["status"] = nextU["status"]
		// A built-in kind's status strategy keeps the rest of the stored
		// object but takes metadata from the write (a namespace's status
		// patch may set annotations); a custom resource's keeps old metadata.
		if _, custom := next.(*unstructured.Unstructured); !custom {
			merged["metadata"] = nextU["metadata"]
		}
	case r.info.Subresource == "finalize":
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
	out := r.res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(merged, out); err != nil {
		return next
	}
	return out
}

// toMap is obj as a map the caller may change: a custom resource's own
// map is copied, since it may be shared with the watch cache.
func toMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
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
	return !equalJSON(a, b)
}

func (r *request) manager() string {
	return managerName(r.query("fieldManager"), r.c.Request().UserAgent())
}

func (r *request) dryRun() bool {
	for _, v := range r.c.QueryParams()["dryRun"] {
		if v == metav1.DryRunAll {
			return true
		}
	}
	return false
}

// deleteOptions reads the optional DeleteOptions body and the query
// parameters that may stand for it (gracePeriodSeconds, propagationPolicy,
// orphanDependents), and checks them as kube-apiserver does.
func (r *request) deleteOptions() (deletion.Options, error) {
	opts := &metav1.DeleteOptions{}
	if r.c.Request().ContentLength != 0 {
		body, err := r.readBody()
		if err == nil {
			info, err := bodyDecoder(r.c.Request().Header.Get("Content-Type"))
			if err != nil {
				return deletion.Options{}, err
			}
			if _, _, err := info.Serializer.Decode(body, nil, opts); err != nil {
				return deletion.Options{}, apierrors.NewBadRequest("the body of the request could not be decoded as DeleteOptions: " + err.Error())
			}
		} else if !apierrors.IsBadRequest(err) {
			return deletion.Options{}, err
		}
	}
	if v := r.query("gracePeriodSeconds"); v != "" && opts.GracePeriodSeconds == nil {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return deletion.Options{}, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q: %v", v, err))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := r.query("propagationPolicy"); v != "" && opts.PropagationPolicy == nil {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	// orphanDependents is deprecated but still part of the API.
	if v := r.query("orphanDependents"); v != "" && opts.OrphanDependents == nil {
		b := parseBool(v)
		opts.OrphanDependents = &b
	}
	var errs field.ErrorList
	orphan := opts.OrphanDependents
	if orphan != nil && opts.PropagationPolicy != nil {
		errs = append(errs, field.Invalid(field.NewPath("propagationPolicy"), *opts.PropagationPolicy, "orphanDependents and deletionPropagation cannot be both set"))
	}
	if p := opts.PropagationPolicy; p != nil && *p != metav1.DeletePropagationForeground && *p != metav1.DeletePropagationBackground && *p != metav1.DeletePropagationOrphan {
		errs = append(errs, field.NotSupported(field.NewPath("propagationPolicy"), *p,
			[]string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan), "nil"}))
	}
	if len(errs) > 0 {
		return deletion.Options{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	out := deletion.Options{GracePeriodSeconds: opts.GracePeriodSeconds, Policy: opts.PropagationPolicy}
	if orphan != nil { // the deprecated spelling of orphan and foreground
		p := metav1.DeletePropagationForeground
		if *orphan {
			p = metav1.DeletePropagationOrphan
		}
		out.Policy = &p
	}
	if opts.Preconditions != nil {
		out.Preconditions = &storage.Preconditions{UID: opts.Preconditions.UID, ResourceVersion: opts.Preconditions.ResourceVersion}
	}
	return out, nil
}

// delete deletes the object, or marks it for deletion when a finalizer or
// a grace period holds it (see package deletion); either way the answer
// is the object's last state.
func (r *request) delete() error {
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	if r.dryRun() {
		obj, err := r.store.Get(r.ctx(), r.key(), "")
		if err != nil {
			return err
		}
		return r.respond(http.StatusOK, obj)
	}
	if r.stages.on() {
		cur, err := r.store.Get(r.ctx(), r.key(), "")
		if err != nil {
			return err
		}
		if err := r.admitDelete(cur); err != nil {
			return err
		}
	}
	if r.res.Name == "namespaces" && r.res.GroupVersion.Group == "" {
		return r.terminateNamespace(opts.Preconditions)
	}
	obj, _, err := deletion.Delete(r.ctx(), r.store, r.key(), opts)
	r.stored(obj, err)
	if err != nil {
		return err
	}
	return r.respond(http.StatusOK, obj)
}

// finishDeletion completes the deletion of an object an update has just
// released: its last finalizer removed, its grace period over.
func (r *request) finishDeletion(updated runtime.Object) (runtime.Object, error) {
	gone, _, err := deletion.DeleteIfFinished(r.ctx(), r.store, updated)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return updated, nil // changed again since: whoever changed it finishes it
	}
	return gone, err
}

// terminateNamespace is a namespace's deletion as in kube-apiserver: the
// first delete only marks it Terminating (deletionTimestamp set, phase
// Terminating) and answers with it; the namespace controller then empties
// it and removes its "kubernetes" finalizer, and the namespace goes once
// no finalizer is left. A namespace without finalizers goes at once.
func (r *request) terminateNamespace(pre *storage.Preconditions) error {
	var finalized bool
	obj, err := r.store.GuaranteedUpdate(r.ctx(), r.key(), pre, func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace).DeepCopy()
		finalized = len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0
		if ns.DeletionTimestamp == nil {
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			ns.DeletionTimestamp = &now
			ns.DeletionGracePeriodSeconds = new(int64)
		}
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns, nil
	})
	if err == nil && finalized {
		obj, err = r.store.Delete(r.ctx(), r.key(), nil)
	}
	r.stored(obj, err)
	if err != nil {
		return err
	}
	return r.respond(http.StatusOK, obj)
}

// deleteCollection deletes every object a list with the same selectors
// would return, with the request's DeleteOptions (as kube-apiserver's
// DeleteCollection takes them), and answers with that list.
func (r *request) deleteCollection() error {
	pred, err := r.predicate()
	if err != nil {
		return err
	}
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	// Preconditions name one object; a collection has none in common.
	opts.Preconditions = nil
	res, err := r.store.List(r.ctx(), storage.ListOptions{Namespace: r.info.Namespace, Predicate: pred})
	if err != nil {
		return err
	}
	var deleted []runtime.Object
	for _, obj := range res.Items {
		m, _ := meta.Accessor(obj)
		if !r.dryRun() {
			if obj, _, err = deletion.Delete(r.ctx(), r.store, storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()}, opts); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
		}
		deleted = append(deleted, obj)
	}
	list := r.res.NewList()
	if err := meta.SetList(list, deleted); err != nil {
		return err
	}
	clearItemKinds(list)
	out, err := r.negotiate()
	if err != nil {
		return err
	}
	return writeObject(r.c, http.StatusOK, out.info, r.res.GroupVersion, list)
}
