package kubeapi

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/pipeline"
)

// maxJSONPatchOperations is kube-apiserver's limit on a JSON patch's operations.
const maxJSONPatchOperations = 10000

func init() {
	// As kube-apiserver does (its --json-patch-max-copy-bytes): without a
	// limit, a few dozen "copy" operations doubling a field grow an object
	// without bound.
	jsonpatch.AccumulatedCopySizeLimit = MaxBodyBytes
}

var patchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType}

// patch applies one of the four patch types to the current object, with
// retries on fresh state when another writer got there first.
func (r *request) patch() error {
	body, err := r.readBody()
	if err != nil {
		return err
	}
	pt, err := patchType(r.c.Request().Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	if pt == types.StrategicMergePatchType && r.res.Custom {
		// As kube-apiserver: a custom resource has no patch strategies to merge by.
		return unsupportedMediaType(string(pt), "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
	}
	if _, err := r.fieldValidation(); err != nil {
		return err
	}
	apply := pt == types.ApplyYAMLPatchType
	force := parseBool(r.query("force"))
	if apply && r.query("fieldManager") == "" {
		return apierrors.NewBadRequest("PATCH requests with an apply content type must set fieldManager")
	}
	if !apply && r.query("force") != "" {
		return apierrors.NewBadRequest("force may only be set on apply requests")
	}
	var applied *unstructured.Unstructured
	if apply {
		if applied, err = r.appliedObject(body); err != nil {
			return err
		}
	}
	mark := r.mark()
	updated, err := r.store.GuaranteedUpdate(r.ctx(), r.key(), nil, func(cur runtime.Object) (runtime.Object, error) {
		r.rewind(mark) // a retry on fresh state records its stages afresh
		var next runtime.Object
		var err error
		if apply {
			next, err = r.fields.forSubresource(r.info.Subresource).Apply(cur, applied.DeepCopy(), r.manager(), force)
			err = applyError(err)
		} else {
			next, err = r.applyPatch(pt, body, cur)
		}
		if err != nil {
			return nil, err
		}
		return r.prepareUpdate(next, cur, !apply)
	})
	if apierrors.IsNotFound(err) && apply && r.info.Subresource == "" {
		r.rewind(mark)
		return r.createByApply(applied, force)
	}
	if err == nil && !r.dryRun() {
		updated, err = r.finishDeletion(updated)
	}
	r.stored(updated, err)
	if err != nil {
		return err
	}
	return r.respond(http.StatusOK, updated)
}

// createByApply: server-side apply of an object that does not exist creates it.
func (r *request) createByApply(applied *unstructured.Unstructured, force bool) error {
	empty := r.res.New()
	m, _ := meta.Accessor(empty)
	m.SetName(r.info.Name)
	m.SetNamespace(r.info.Namespace)
	obj, err := r.fields.main.Apply(empty, applied, r.manager(), force)
	if err != nil {
		return applyError(err)
	}
	if err := r.prepareCreate(obj); err != nil {
		return err
	}
	if r.attrs != nil {
		r.attrs.Operation = pipeline.Create // apply of a missing object creates it
	}
	if err := r.admitAndValidate(obj, nil); err != nil {
		return err
	}
	return r.storeCreate(obj)
}

// applyError: the field manager reports an applied object that does not
// fit the kind's schema (a boolean where a string belongs, two entries with
// one key in a keyed list) as a plain error, which kube-apiserver answers
// with a 500 (kubernetes/kubernetes#139253). It is the client's input, so
// here it is a 400 with the same message.
func applyError(err error) error {
	var st apierrors.APIStatus
	if err == nil || errors.As(err, &st) || !strings.HasPrefix(err.Error(), "failed to create typed patch object") {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}

func patchType(contentType string) (types.PatchType, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err == nil {
		for _, pt := range patchTypes {
			if mt == string(pt) {
				return pt, nil
			}
		}
	}
	var accepted []string
	for _, pt := range patchTypes {
		accepted = append(accepted, string(pt))
	}
	return "", unsupportedMediaType(contentType, strings.Join(accepted, ", "))
}

// appliedObject is an apply body: YAML (or JSON) naming this resource's
// apiVersion and kind, and the object of the URL.
func (r *request) appliedObject(body []byte) (*unstructured.Unstructured, error) {
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

// applyPatch applies a JSON, merge or strategic merge patch to cur's JSON
// and decodes the result, checking unknown fields as a body would be.
func (r *request) applyPatch(pt types.PatchType, patch []byte, cur runtime.Object) (runtime.Object, error) {
	var buf bytes.Buffer
	if err := encode(serializerFor(runtime.ContentTypeJSON).Serializer, r.res.GroupVersion, cur, &buf); err != nil {
		return nil, err
	}
	var jsonPatch jsonpatch.Patch
	if pt == types.JSONPatchType {
		var err error
		if jsonPatch, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest("the JSON patch could not be decoded: " + err.Error())
		}
		if len(jsonPatch) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(jsonPatch)))
		}
	}
	patched, err := func() (patched []byte, err error) {
		// The patch libraries panic on some malformed patches (json-patch
		// v4 on a "test" of the whole document without a value): that is
		// the client's patch failing, not the server.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("the patch could not be applied: %v", p)
			}
		}()
		switch pt {
		case types.JSONPatchType:
			return jsonPatch.Apply(buf.Bytes())
		case types.MergePatchType:
			return jsonpatch.MergePatch(buf.Bytes(), patch)
		default:
			return strategicpatch.StrategicMergePatch(buf.Bytes(), patch, r.res.New())
		}
	}()
	if err != nil {
		return nil, apierrors.NewInvalid(r.res.GroupVersionKind().GroupKind(), r.info.Name,
			field.ErrorList{field.Invalid(field.NewPath("patch"), string(patch), err.Error())})
	}
	return r.decodeBody(patched, runtime.ContentTypeJSON)
}
