package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubelab/kubelab/storage"
)

// MaxJSONPatchOperations is kube-apiserver's limit on a JSON patch's operations.
const MaxJSONPatchOperations = 10000

// maxPatchCopyBytes is kube-apiserver's --json-patch-max-copy-bytes
// default: a request body's limit, 3 MiB.
const maxPatchCopyBytes = 3 << 20

func init() {
	// Without a limit, a few dozen "copy" operations doubling a field grow
	// an object without bound.
	jsonpatch.AccumulatedCopySizeLimit = maxPatchCopyBytes
}

// PatchOptions are the parts of metav1.PatchOptions (and the URL) a patch
// or an apply takes.
type PatchOptions struct {
	DryRun bool
	// FieldManager records who set the object's fields; an apply must name one.
	FieldManager string
	// Subresource is "" or "status".
	Subresource string
	// Force takes the applied fields from their other managers (apply only).
	Force bool
	// Decode turns the patched object's JSON into an object of the kind,
	// checking unknown fields as the caller wants; nil decodes leniently.
	Decode func(data []byte) (runtime.Object, error)
}

// Patch applies a JSON, merge or strategic merge patch to the stored
// object, with retries on fresh state when another writer got there
// first, and stores the result as Update does.
func (s *Store) Patch(ctx context.Context, k storage.Key, pt types.PatchType, patch []byte, opts PatchOptions) (runtime.Object, error) {
	o, err := s.begin(ctx, "patch", opts.Subresource, k, opts.DryRun)
	if err != nil {
		return nil, err
	}
	updated, err := s.update(o, k, UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, Subresource: opts.Subresource},
		func(cur runtime.Object) (runtime.Object, error) {
			next, err := s.applyPatch(k, pt, patch, cur, opts.Decode)
			if err != nil {
				return nil, err
			}
			return s.beginUpdate(o, next, cur, opts.Subresource, opts.FieldManager, true)
		})
	return updated, o.finish(err)
}

// Apply is server-side apply: the applied configuration merged into the
// stored object by its field managers, or, when there is none, a new
// object made of it (created is then true).
func (s *Store) Apply(ctx context.Context, k storage.Key, applied *unstructured.Unstructured, opts PatchOptions) (obj runtime.Object, created bool, err error) {
	if opts.FieldManager == "" {
		return nil, false, apierrors.NewBadRequest("PATCH requests with an apply content type must set fieldManager")
	}
	o, err := s.begin(ctx, "patch", opts.Subresource, k, opts.DryRun)
	if err != nil {
		return nil, false, err
	}
	mark := o.mark()
	updated, err := s.update(o, k, UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, Subresource: opts.Subresource},
		func(cur runtime.Object) (runtime.Object, error) {
			next, err := s.fields.forSubresource(opts.Subresource).Apply(cur, applied.DeepCopy(), opts.FieldManager, opts.Force)
			if err != nil {
				return nil, applyError(err)
			}
			return s.beginUpdate(o, next, cur, opts.Subresource, opts.FieldManager, false)
		})
	if apierrors.IsNotFound(err) && opts.Subresource == "" {
		o.rewind(mark)
		updated, err = s.createByApply(o, k, applied, opts)
		return updated, err == nil, o.finish(err)
	}
	return updated, false, o.finish(err)
}

// createByApply: server-side apply of an object that does not exist creates it.
func (s *Store) createByApply(o *op, k storage.Key, applied *unstructured.Unstructured, opts PatchOptions) (runtime.Object, error) {
	empty := s.Resource.New()
	m, _ := meta.Accessor(empty)
	m.SetName(k.Name)
	m.SetNamespace(k.Namespace)
	obj, err := s.fields.main.Apply(empty, applied, opts.FieldManager, opts.Force)
	if err != nil {
		return nil, applyError(err)
	}
	if err := s.beginCreate(o, obj); err != nil {
		return nil, err
	}
	if err := o.admitAndValidate(s, obj, nil); err != nil {
		return nil, err
	}
	return s.storeCreate(o, obj)
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

// applyPatch applies a JSON, merge or strategic merge patch to cur's JSON
// and decodes the result.
func (s *Store) applyPatch(k storage.Key, pt types.PatchType, patch []byte, cur runtime.Object, decode func([]byte) (runtime.Object, error)) (runtime.Object, error) {
	r := s.Resource
	doc, err := encodeJSON(r, cur)
	if err != nil {
		return nil, err
	}
	var jsonPatch jsonpatch.Patch
	if pt == types.JSONPatchType {
		if jsonPatch, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest("the JSON patch could not be decoded: " + err.Error())
		}
		if len(jsonPatch) > MaxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(jsonPatch)))
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
			return jsonPatch.Apply(doc)
		case types.MergePatchType:
			return jsonpatch.MergePatch(doc, patch)
		case types.StrategicMergePatchType:
			return strategicpatch.StrategicMergePatch(doc, patch, r.New())
		}
		return nil, fmt.Errorf("unsupported patch type %q", pt)
	}()
	if err != nil {
		return nil, apierrors.NewInvalid(r.GroupVersionKind().GroupKind(), k.Name,
			field.ErrorList{field.Invalid(field.NewPath("patch"), string(patch), err.Error())})
	}
	if decode == nil {
		decode = func(data []byte) (runtime.Object, error) { return decodeJSON(r, data) }
	}
	return decode(patched)
}

// encodeJSON is obj as JSON at the resource's version.
func encodeJSON(r *Resource, obj runtime.Object) ([]byte, error) {
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	var buf bytes.Buffer
	var err error
	if _, ok := obj.(runtime.Unstructured); ok {
		err = info.Serializer.Encode(obj, &buf)
	} else {
		err = Codecs.EncoderForVersion(info.Serializer, r.GroupVersion).Encode(obj, &buf)
	}
	return buf.Bytes(), err
}

// decodeJSON reads an object of the resource's kind from JSON, leniently.
func decodeJSON(r *Resource, data []byte) (runtime.Object, error) {
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	gvk := r.GroupVersionKind()
	obj, _, err := info.Serializer.Decode(data, &gvk, r.New())
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patched object could not be decoded as %s: %v", gvk.Kind, err))
	}
	return obj, nil
}
