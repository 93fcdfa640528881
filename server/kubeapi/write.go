package kubeapi

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

func (r *request) create() error {
	if r.res.Namespaced && r.info.Namespace == "" {
		return apierrors.NewBadRequest("the namespace of the object must be given in the URL")
	}
	obj, err := r.readObject()
	if err != nil {
		return err
	}
	created, err := r.store.Create(r.ctx(), obj, registry.CreateOptions{DryRun: r.dryRun(), FieldManager: r.manager()})
	if err != nil {
		return err
	}
	return r.respond(http.StatusCreated, created)
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
	updated, err := r.store.Update(r.ctx(), r.key(), registry.DefaultUpdatedObjectInfo(obj),
		registry.UpdateOptions{DryRun: r.dryRun(), FieldManager: r.manager(), Subresource: r.info.Subresource})
	if err != nil {
		return err
	}
	return r.respond(http.StatusOK, updated)
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
func (r *request) deleteOptions() (registry.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if r.c.Request().ContentLength != 0 {
		body, err := r.readBody()
		if err == nil {
			info, err := bodyDecoder(r.c.Request().Header.Get("Content-Type"))
			if err != nil {
				return registry.DeleteOptions{}, err
			}
			if _, _, err := info.Serializer.Decode(body, nil, opts); err != nil {
				return registry.DeleteOptions{}, apierrors.NewBadRequest("the body of the request could not be decoded as DeleteOptions: " + err.Error())
			}
		} else if !apierrors.IsBadRequest(err) {
			return registry.DeleteOptions{}, err
		}
	}
	if v := r.query("gracePeriodSeconds"); v != "" && opts.GracePeriodSeconds == nil {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return registry.DeleteOptions{}, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q: %v", v, err))
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
		return registry.DeleteOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	out := registry.DeleteOptions{DryRun: r.dryRun(), GracePeriodSeconds: opts.GracePeriodSeconds, PropagationPolicy: opts.PropagationPolicy}
	if orphan != nil { // the deprecated spelling of orphan and foreground
		p := metav1.DeletePropagationForeground
		if *orphan {
			p = metav1.DeletePropagationOrphan
		}
		out.PropagationPolicy = &p
	}
	if opts.Preconditions != nil {
		out.Preconditions = &storage.Preconditions{UID: opts.Preconditions.UID, ResourceVersion: opts.Preconditions.ResourceVersion}
	}
	return out, nil
}

// delete deletes the object, or marks it for deletion when a finalizer or
// a grace period holds it; either way the answer is the object's last state.
func (r *request) delete() error {
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	obj, _, err := r.store.Delete(r.ctx(), r.key(), opts)
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
	deleted, err := r.store.DeleteCollection(r.ctx(), storage.ListOptions{Namespace: r.info.Namespace, Predicate: pred}, opts)
	if err != nil {
		return err
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
