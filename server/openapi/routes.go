package openapi

import (
	"fmt"
	"strings"
	"unicode"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
)

// This file implements kube-openapi's common.RouteContainer, Route and
// Parameter interfaces: the description of an API that kube-apiserver gets
// from go-restful, built here from kubelab's Resource list instead, so that
// kube-openapi's own builders produce the documents.

// webService is one go-restful WebService: a root path such as /api/v1 and
// the routes under it. Its root path also names its OpenAPI v3 document.
type webService struct {
	rootPath string
	routes   []common.Route
}

var _ common.RouteContainer = (*webService)(nil)

// RootPath, PathParameters and Routes implement common.RouteContainer.
func (w *webService) RootPath() string                   { return w.rootPath }
func (w *webService) PathParameters() []common.Parameter { return nil }
func (w *webService) Routes() []common.Route             { return w.routes }

// route is one operation: a method on a path, with what go-restful's
// RouteBuilder records (Doc, Operation, Param, Reads, Writes, Returns...).
type route struct {
	method    string
	path      string
	operation string
	doc       string
	params    []common.Parameter
	consumes  []string
	produces  []string
	metadata  map[string]interface{}
	reads     interface{}
	writes    interface{}
	responses []common.StatusCodeResponse
}

var _ common.Route = (*route)(nil)

// Method and the methods below implement common.Route.
func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.operation }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.doc }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.metadata }
func (r *route) RequestPayloadSample() interface{}                { return r.reads }
func (r *route) ResponsePayloadSample() interface{}               { return r.writes }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

// returns adds a documented response, like RouteBuilder.Returns.
func (r *route) returns(code int, message string, model interface{}) {
	r.responses = append(r.responses, response{code, message, model})
}

// body records the request body, like RouteBuilder.Reads: a required
// parameter named "body" whose schema comes from the sample.
func (r *route) body(sample interface{}, required bool) {
	r.reads = sample
	r.params = append(r.params, &param{name: "body", kind: common.BodyParameterKind, required: required})
}

// response is one documented status code.
type response struct {
	code    int
	message string
	model   interface{}
}

var _ common.StatusCodeResponse = response{}

// Code, Message and Model implement common.StatusCodeResponse.
func (r response) Code() int          { return r.code }
func (r response) Message() string    { return r.message }
func (r response) Model() interface{} { return r.model }

// param is one route parameter. Like go-restful's, a parameter does not
// allow multiple values, which is why every kube parameter schema says
// "uniqueItems": true.
type param struct {
	name        string
	description string
	kind        common.ParameterKind
	dataType    string
	required    bool
}

var _ common.Parameter = (*param)(nil)

// Name and the methods below implement common.Parameter.
func (p *param) Name() string               { return p.name }
func (p *param) Description() string        { return p.description }
func (p *param) Required() bool             { return p.required }
func (p *param) Kind() common.ParameterKind { return p.kind }
func (p *param) DataType() string           { return p.dataType }
func (p *param) AllowMultiple() bool        { return false }

// pathParam and queryParam mirror WebService.PathParameter/QueryParameter.
func pathParam(name, description string) *param {
	return &param{name: name, description: description, kind: common.PathParameterKind, dataType: "string", required: true}
}

func queryParam(name, description, dataType string) *param {
	return &param{name: name, description: description, kind: common.QueryParameterKind, dataType: dataType}
}

// opVerbs are the verbs operation names start with
// (k8s.io/apiserver/pkg/endpoints/openapi).
var opVerbs = util.NewTrie([]string{"get", "log", "read", "replace", "patch", "delete", "deletecollection", "watch", "connect", "proxy", "list", "create"})

// operationIDAndTags turns an operation name and path into kube's operation
// ID and tag: listNamespacedPod on /api/v1/... becomes listCoreV1NamespacedPod
// tagged core_v1, patchNamespacedRole on /apis/rbac.authorization.k8s.io/v1
// becomes patchRbacAuthorizationV1NamespacedRole. Like kube's, the shortest
// verb wins, so deletecollection becomes deleteCoreV1CollectionNamespacedPod.
func operationIDAndTags(r common.Route) (string, []string, error) {
	op := r.OperationName()
	prefix, ok := opVerbs.GetPrefix(op)
	if !ok {
		return op, nil, fmt.Errorf("openapi: operation %q does not start with a verb", op)
	}
	op = op[len(prefix):]
	parts := strings.Split(strings.Trim(r.Path(), "/"), "/")
	if len(parts) >= 1 && parts[0] == "api" {
		parts = append([]string{"apis", "core"}, parts[1:]...)
	}
	var tags []string
	switch {
	case len(parts) >= 2 && parts[0] == "apis":
		group := strings.TrimSuffix(parts[1], ".k8s.io")
		prefix += toOperationID(group, prefix != "")
		tag := toOperationID(group, false)
		if len(parts) > 2 {
			prefix += toOperationID(parts[2], prefix != "")
			tag += "_" + toOperationID(parts[2], false)
		}
		tags = append(tags, tag)
	case len(parts) >= 1:
		tags = append(tags, toOperationID(parts[0], false))
	}
	return prefix + toOperationID(op, prefix != ""), tags, nil
}

// toOperationID camel-cases s, dropping punctuation: "rbac.authorization"
// becomes "RbacAuthorization" (kube's ToValidOperationID).
func toOperationID(s string, capitalizeFirst bool) string {
	var b strings.Builder
	capitalize := capitalizeFirst
	for i, r := range s {
		if unicode.IsLetter(r) || r == '_' || (i != 0 && unicode.IsDigit(r)) {
			if capitalize {
				r = unicode.ToUpper(r)
				capitalize = false
			}
			b.WriteRune(r)
		} else {
			capitalize = true
		}
	}
	return b.String()
}
