package kubeapi

import (
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// fieldValidation is the fieldValidation query parameter: what to do with
// unknown or duplicate fields in a body.
type fieldValidation string

const (
	validationStrict fieldValidation = "Strict"
	validationWarn   fieldValidation = "Warn"
	validationIgnore fieldValidation = "Ignore"
)

func (r *request) fieldValidation() (fieldValidation, error) {
	switch v := fieldValidation(r.query("fieldValidation")); v {
	case "":
		return validationWarn, nil
	case validationStrict, validationWarn, validationIgnore:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Ignore, Warn or Strict, not %q", v))
	}
}

// readObject reads and decodes the request body.
func (r *request) readObject() (runtime.Object, error) {
	body, err := r.readBody()
	if err != nil {
		return nil, err
	}
	return r.decodeBody(body, r.c.Request().Header.Get("Content-Type"))
}

// decodeBody turns a request body into an object of the resource's kind.
// A body without apiVersion and kind is taken to be of the resource's; one
// of another kind is refused, as are unknown fields under Strict (under
// Warn they come back as Warning headers, as kube-apiserver sends them).
func (r *request) decodeBody(body []byte, contentType string) (runtime.Object, error) {
	info, err := bodyDecoder(contentType)
	if err != nil {
		return nil, err
	}
	validation, err := r.fieldValidation()
	if err != nil {
		return nil, err
	}
	if err := r.checkTypeMeta(body, info.MediaType); err != nil {
		return nil, err
	}
	gvk := r.res.GroupVersionKind()
	decoder := info.Serializer
	if validation != validationIgnore && info.StrictSerializer != nil {
		decoder = info.StrictSerializer
	}
	obj, actual, err := decoder.Decode(body, &gvk, r.res.New())
	if err != nil && runtime.IsStrictDecodingError(err) {
		if validation == validationStrict {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		for _, w := range strictErrors(err) {
			r.warn(w)
		}
		obj, actual, err = info.Serializer.Decode(body, &gvk, r.res.New())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as %s: %v", gvk.Kind, err))
	}
	if actual.GroupVersion() != r.res.GroupVersion {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), r.res.GroupVersion))
	}
	if actual.Kind != r.res.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", actual.Kind, r.res.Kind))
	}
	if r.res.Prune != nil {
		if err := r.pruneUnknown(obj, validation); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// pruneUnknown drops the fields a custom resource's schema does not
// declare, as kube-apiserver does, and reports them like unknown fields
// of a built-in kind: an error under Strict, warnings under Warn.
func (r *request) pruneUnknown(obj runtime.Object, validation fieldValidation) error {
	var msgs []string
	for _, p := range r.res.Prune(obj) {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", p))
	}
	if len(msgs) == 0 || validation == validationIgnore {
		return nil
	}
	if validation == validationStrict {
		return apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	}
	for _, m := range msgs {
		r.warn(m)
	}
	return nil
}

func strictErrors(err error) []string {
	var out []string
	if se, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range se.Errors() {
			out = append(out, e.Error())
		}
	}
	if len(out) == 0 {
		out = append(out, strings.TrimPrefix(err.Error(), "strict decoding error: "))
	}
	return out
}

// warn adds a Warning header, which kubectl prints as "Warning: ...".
func (r *request) warn(msg string) {
	r.c.Response().Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
}

// checkTypeMeta refuses a JSON or YAML body that names another apiVersion
// or kind before decoding, so the client hears what is wrong rather than
// that the kind is unknown in that version.
func (r *request) checkTypeMeta(body []byte, mediaType string) error {
	if mediaType != runtime.ContentTypeJSON && mediaType != runtime.ContentTypeYAML {
		return nil
	}
	var tm metav1.TypeMeta
	unmarshal := func(b []byte, v any) error { return yaml.Unmarshal(b, v) }
	if mediaType == runtime.ContentTypeJSON {
		unmarshal = json.Unmarshal // much cheaper than going through YAML
	}
	if err := unmarshal(body, &tm); err != nil {
		return nil // the decoder reports the syntax error
	}
	if tm.APIVersion != "" && tm.APIVersion != r.res.GroupVersion.String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, r.res.GroupVersion))
	}
	if tm.Kind != "" && tm.Kind != r.res.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, r.res.Kind))
	}
	return nil
}
