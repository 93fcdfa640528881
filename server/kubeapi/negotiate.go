package kubeapi

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// output is what a client asked to get back: a serialization, and whether
// as the object itself, a Table, or only its metadata.
type output struct {
	info runtime.SerializerInfo
	// as is "", "Table", "PartialObjectMetadata" or "PartialObjectMetadataList".
	as string
	// meta is the meta.k8s.io version asked for with as: v1, or v1beta1,
	// which older clients (and the e2e suite) still ask Tables in.
	meta schema.GroupVersion
}

var acceptedAs = map[string]bool{"Table": true, "PartialObjectMetadata": true, "PartialObjectMetadataList": true}

// negotiateOutput picks the first entry of the Accept header kubelab can
// serve, as kube-apiserver does; an empty header or */* means JSON.
func negotiateOutput(accept string) (output, error) {
	return negotiateOutputOf(accept, false, false)
}

// negotiate is negotiateOutput for the request's resource; a custom
// resource has no protobuf form, as in kube-apiserver. A review (such as a
// SelfSubjectAccessReview) has no Table form either: kube-apiserver's
// storage for it converts nothing to a Table, so asking for one is a 406.
func (r *request) negotiate() (output, error) {
	return negotiateOutputOf(r.c.Request().Header.Get("Accept"), r.res.Custom, r.res.Review != nil)
}

func negotiateOutputOf(accept string, noProtobuf, noTable bool) (output, error) {
	if strings.TrimSpace(accept) == "" {
		return output{info: serializerFor(runtime.ContentTypeJSON)}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == "*/*" || mt == "application/*" {
			mt = runtime.ContentTypeJSON
		}
		info := serializerFor(mt)
		if info.MediaType == "" || (noProtobuf && info.MediaType == runtime.ContentTypeProtobuf) {
			continue
		}
		as := params["as"]
		if as != "" && (!acceptedAs[as] || params["g"] != metav1.GroupName || (params["v"] != "v1" && params["v"] != "v1beta1")) {
			continue
		}
		if as == "Table" && noTable {
			continue
		}
		out := output{info: info, as: as, meta: metaGV}
		if as != "" {
			out.meta.Version = params["v"]
		}
		return out, nil
	}
	return output{}, notAcceptable()
}

func serializerFor(mediaType string) runtime.SerializerInfo {
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), mediaType)
	return info
}

func mediaTypes() string {
	var types []string
	for _, info := range Codecs.SupportedMediaTypes() {
		types = append(types, info.MediaType)
	}
	return strings.Join(types, ", ")
}

func notAcceptable() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + mediaTypes(),
	}}
}

func unsupportedMediaType(contentType string, accepted string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format %q - accepted media types include: %s", contentType, accepted),
	}}
}

// bodyDecoder is the serializer for a request body's Content-Type.
func bodyDecoder(contentType string) (runtime.SerializerInfo, error) {
	mt := runtime.ContentTypeJSON
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return runtime.SerializerInfo{}, unsupportedMediaType(contentType, mediaTypes())
		}
	}
	info := serializerFor(mt)
	if info.MediaType == "" {
		return runtime.SerializerInfo{}, unsupportedMediaType(contentType, mediaTypes())
	}
	return info, nil
}
