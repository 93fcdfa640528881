package kubeapi

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
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

// negotiateOutput picks the first entry of the Accept header the endpoint
// can serve, with kube-apiserver's own negotiation: an empty header or */*
// means JSON, and curl, wget and browsers get indented JSON unless they
// ask for pretty=false.
func negotiateOutput(req *http.Request, endpoint negotiation.EndpointRestrictions) (output, error) {
	opts, info, err := negotiation.NegotiateOutputMediaType(req, Codecs, endpoint)
	if err != nil {
		return output{}, err
	}
	out := output{info: info}
	if c := opts.Convert; c != nil {
		out.as, out.meta = c.Kind, c.GroupVersion()
	}
	return out, nil
}

// negotiate is negotiateOutput for the request's resource.
func (r *request) negotiate() (output, error) {
	return negotiateOutput(r.c.Request(), resourceEndpoint{r.res})
}

// negotiateWatch is negotiate for a watch, whose events are framed by a
// stream serializer (JSON and protobuf have one, YAML has not), never
// indented, as kube-apiserver's watch handler negotiates them.
func (r *request) negotiateWatch() (output, error) {
	out, err := r.negotiate()
	if err != nil {
		return output{}, err
	}
	info, err := negotiation.NegotiateOutputMediaTypeStream(r.c.Request(), Codecs, resourceEndpoint{r.res})
	if err != nil {
		return output{}, err
	}
	out.info = info
	return out, nil
}

// resourceEndpoint tells the negotiation what a resource's endpoint serves,
// answering as kube-apiserver's handlers.RequestScope does. That type needs
// the whole of kube's REST storage to build; kubelab's rows know the same
// answers: every resource converts to PartialObjectMetadata, all but the
// reviews to Tables (in JSON or YAML only), and a custom resource itself
// has no protobuf form.
type resourceEndpoint struct{ res *Resource }

var _ negotiation.EndpointRestrictions = resourceEndpoint{}

// AllowsMediaTypeTransform answers whether the object may be served as
// target (nil for the object itself) in type/subType.
func (e resourceEndpoint) AllowsMediaTypeTransform(mimeType, mimeSubType string, target *schema.GroupVersionKind) bool {
	if target == nil {
		return !e.res.Custom || mimeSubType != "vnd.kubernetes.protobuf"
	}
	if target.Group != metav1.GroupName || (target.Version != "v1" && target.Version != "v1beta1") {
		return false
	}
	switch target.Kind {
	case "Table":
		return e.res.Review == nil && mimeType == "application" && (mimeSubType == "json" || mimeSubType == "yaml")
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return true
	}
	return false
}

// AllowsServerVersion answers for the sv parameter: meta's v1.
func (resourceEndpoint) AllowsServerVersion(version string) bool { return version == "v1" }

// AllowsStreamSchema answers for the stream parameter: watch only.
func (resourceEndpoint) AllowsStreamSchema(schema string) bool { return schema == "watch" }

// bodyDecoder is the serializer for a request body's Content-Type (JSON
// if there is none), or kube-apiserver's 415.
func bodyDecoder(contentType string) (runtime.SerializerInfo, error) {
	return negotiation.NegotiateInputSerializerForMediaType(contentType, false, Codecs)
}

func serializerFor(mediaType string) runtime.SerializerInfo {
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), mediaType)
	return info
}
