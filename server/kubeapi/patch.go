package kubeapi

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/registry"
)

var patchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType}

// patch applies one of the four patch types through the store, which
// retries on fresh state when another writer got there first.
func (r *request) patch() error {
	body, err := r.readBody()
	if err != nil {
		return err
	}
	pt, err := r.patchType()
	if err != nil {
		return err
	}
	validation, err := r.fieldValidation()
	if err != nil {
		return err
	}
	apply := pt == types.ApplyYAMLPatchType
	if apply && r.query("fieldManager") == "" {
		return apierrors.NewBadRequest("PATCH requests with an apply content type must set fieldManager")
	}
	if !apply && r.query("force") != "" {
		return apierrors.NewBadRequest("force may only be set on apply requests")
	}
	opts := registry.PatchOptions{DryRun: r.dryRun(), FieldManager: r.manager(), Subresource: r.info.Subresource, Force: parseBool(r.query("force")),
		Decode: func(data []byte) (runtime.Object, error) { return r.decodeBody(data, runtime.ContentTypeJSON) }}
	if !apply {
		updated, err := r.store.Patch(r.ctx(), r.key(), pt, body, opts)
		if err != nil {
			return err
		}
		return r.respond(http.StatusOK, updated)
	}
	applied, err := r.appliedObject(body, validation)
	if err != nil {
		return err
	}
	obj, created, err := r.store.Apply(r.ctx(), r.key(), applied, opts)
	if err != nil {
		return err
	}
	if created {
		return r.respond(http.StatusCreated, obj)
	}
	return r.respond(http.StatusOK, obj)
}

// patchType reads the patch type from the Content-Type as kube-apiserver's
// patch handler does, parameters dropped. A custom resource has no patch
// strategies to merge by, so it takes no strategic merge patch.
func (r *request) patchType() (types.PatchType, error) {
	contentType := r.c.Request().Header.Get("Content-Type")
	if i := strings.Index(contentType, ";"); i > 0 {
		contentType = contentType[:i]
	}
	var accepted []string
	for _, pt := range patchTypes {
		if pt == types.StrategicMergePatchType && r.res.Custom {
			continue
		}
		if contentType == string(pt) {
			return pt, nil
		}
		accepted = append(accepted, string(pt))
	}
	return "", negotiation.NewUnsupportedMediaTypeError(accepted)
}

// appliedObject is an apply body: YAML (or JSON) naming this resource's
// apiVersion and kind, and the object of the URL.
func (r *request) appliedObject(body []byte, validation fieldValidation) (*unstructured.Unstructured, error) {
	if validation != validationIgnore {
		// Duplicate keys, which a lenient decode silently resolves to the
		// last one, are what strict decoding of an apply body catches
		// (unknown fields are the schema's to find), as in kube-apiserver.
		if err := yaml.UnmarshalStrict(body, &map[string]any{}); err != nil {
			if validation == validationStrict {
				return nil, apierrors.NewBadRequest("error strict decoding YAML: " + err.Error())
			}
			r.warn(err.Error())
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	j, err := yaml.YAMLToJSON(body)
	if err == nil {
		// apimachinery's json keeps integers int64, as a custom resource's
		// schema (and CEL) expects; encoding/json would make them float64.
		err = utiljson.Unmarshal(j, &u.Object)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest("error decoding YAML: " + err.Error())
	}
	gvk := u.GroupVersionKind()
	switch {
	case u.GetAPIVersion() == "" || u.GetKind() == "":
		return nil, apierrors.NewBadRequest("apply requests must name apiVersion and kind")
	case gvk.GroupVersion() != r.res.GroupVersion:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), r.res.GroupVersion))
	case gvk.Kind != r.res.Kind:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, r.res.Kind))
	case u.GetName() != "" && u.GetName() != r.info.Name:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", u.GetName(), r.info.Name))
	case u.GetNamespace() != "" && u.GetNamespace() != r.info.Namespace:
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return u, nil
}
