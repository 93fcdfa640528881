package kubeapi

import (
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/storage"
)

func (r *request) get() error {
	obj, err := r.store.Get(r.ctx(), r.key(), r.query("resourceVersion"))
	if err != nil {
		return err
	}
	return r.respond(http.StatusOK, obj)
}

func (r *request) list() error {
	pred, err := r.predicate()
	if err != nil {
		return err
	}
	opts := storage.ListOptions{
		Namespace:            r.info.Namespace,
		ResourceVersion:      r.query("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(r.query("resourceVersionMatch")),
		Continue:             r.query("continue"),
		Predicate:            pred,
	}
	if l := r.query("limit"); l != "" {
		if opts.Limit, err = strconv.ParseInt(l, 10, 64); err != nil || opts.Limit < 0 {
			return apierrors.NewBadRequest("limit must be a non-negative integer: " + strconv.Quote(l))
		}
	}
	res, err := r.store.List(r.ctx(), opts)
	if err != nil {
		return err
	}
	listMeta := metav1.ListMeta{
		ResourceVersion: strconv.FormatInt(res.ResourceVersion, 10), Continue: res.Continue, RemainingItemCount: res.RemainingItemCount,
	}
	out, err := r.negotiate()
	if err != nil {
		return err
	}
	switch out.as {
	case "Table":
		t, err := r.res.ConvertToTable(res.Items, listMeta, includeObject(r.query("includeObject")), false)
		if err != nil {
			return err
		}
		return writeObject(r.c, http.StatusOK, out.info, out.meta, t)
	case "PartialObjectMetadataList", "PartialObjectMetadata":
		list := &metav1.PartialObjectMetadataList{ListMeta: listMeta}
		for _, obj := range res.Items {
			list.Items = append(list.Items, *partialMetadata(obj))
		}
		return writeObject(r.c, http.StatusOK, out.info, out.meta, list)
	}
	list := r.res.NewList()
	if err := meta.SetList(list, res.Items); err != nil {
		return err
	}
	clearItemKinds(list)
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	lm.SetResourceVersion(listMeta.ResourceVersion)
	lm.SetContinue(listMeta.Continue)
	lm.SetRemainingItemCount(listMeta.RemainingItemCount)
	return writeObject(r.c, http.StatusOK, out.info, r.res.GroupVersion, list)
}

// predicate parses labelSelector and fieldSelector; a field the resource
// cannot be selected by is refused, as kube-apiserver refuses it.
func (r *request) predicate() (storage.Predicate, error) {
	var p storage.Predicate
	var err error
	if s := r.query("labelSelector"); s != "" {
		if p.Label, err = labels.Parse(s); err != nil {
			return p, apierrors.NewBadRequest(err.Error())
		}
	}
	if s := r.query("fieldSelector"); s != "" {
		if p.Field, err = fields.ParseSelector(s); err != nil {
			return p, apierrors.NewBadRequest(err.Error())
		}
		known := r.selectableFields()
		for _, req := range p.Field.Requirements() {
			if _, ok := known[req.Field]; !ok {
				return p, apierrors.NewBadRequest("field label not supported: " + req.Field)
			}
		}
	}
	return p, nil
}

func (r *request) selectableFields() fields.Set { return r.store.SelectableFields() }

// clearItemKinds drops kind and apiVersion from the items of a built-in
// kind's list, as kube-apiserver's lists have them: the list says what its
// items are, and a client that decodes both a created object (whose kind
// the decoder clears) and a listed one must get equal objects. The items
// are the list's own copies, not the watch cache's objects. Custom
// resources' items keep theirs, as in kube.
func clearItemKinds(list runtime.Object) {
	if _, ok := list.(runtime.Unstructured); ok {
		return
	}
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	})
}
