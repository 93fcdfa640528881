package kubeapi

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

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

// deleteOptions reads the request's DeleteOptions as kube-apiserver's
// delete handler does: from the body if there is one (the query is then
// not read, dryRun included), else from the query parameters; and checks
// them with apimachinery's ValidateDeleteOptions.
func (r *request) deleteOptions() (registry.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := r.readOptionalBody()
	if err != nil {
		return registry.DeleteOptions{}, err
	}
	if len(body) > 0 {
		// kube decodes DeleteOptions with meta's own codecs, which take a
		// per-group DeleteOptions as well as meta.k8s.io/v1's.
		info, err := negotiation.NegotiateInputSerializer(r.c.Request(), false, metainternalversionscheme.Codecs)
		if err != nil {
			return registry.DeleteOptions{}, err
		}
		defaultGVK := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		obj, _, err := metainternalversionscheme.Codecs.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion).Decode(body, &defaultGVK, opts)
		if err != nil {
			return registry.DeleteOptions{}, apierrors.NewBadRequest(err.Error())
		}
		if obj != opts {
			return registry.DeleteOptions{}, apierrors.NewBadRequest("decoded object cannot be converted to DeleteOptions")
		}
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.c.QueryParams(), metav1.SchemeGroupVersion, opts); err != nil {
		return registry.DeleteOptions{}, apierrors.NewBadRequest(err.Error())
	}
	// kube's AllowUnsafeMalformedObjectDeletion gate is off: the option is
	// dropped, not refused.
	opts.IgnoreStoreReadErrorWithClusterBreakingPotential = nil
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return registry.DeleteOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	out := registry.DeleteOptions{DryRun: len(opts.DryRun) > 0, GracePeriodSeconds: opts.GracePeriodSeconds, PropagationPolicy: opts.PropagationPolicy}
	if orphan := opts.OrphanDependents; orphan != nil { // the deprecated spelling of orphan and foreground
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
