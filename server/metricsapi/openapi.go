package metricsapi

import (
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

//go:generate ./generate.sh

// The server publishes /openapi/v2 and /openapi/v3 as every aggregated API
// server does, so that kube-apiserver's aggregator (kubelab's here) can
// merge its schema into the cluster's documents for kubectl explain and
// client tooling. The documents are built by kube-openapi's own builders
// from a description of the routes below and the generated definitions.

// v3DocumentName is the group version's document in /openapi/v3.
var v3DocumentName = "apis/" + GroupVersion.Group + "/" + GroupVersion.Version

// openAPI is the server's documents, built once: its API never changes.
type openAPI struct {
	v2 http.Handler
	v3 *handler3.OpenAPIService
}

func newOpenAPI() (*openAPI, error) {
	ws := &webService{rootPath: "/apis/" + GroupVersion.String(), routes: routes()}
	v2, err := builder.BuildOpenAPISpecFromRoutes([]common.RouteContainer{ws}, v2Config())
	if err != nil {
		return nil, fmt.Errorf("metricsapi: building OpenAPI v2: %w", err)
	}
	// As kube's generic server does for v2: defaults are dropped so that the
	// document merges cleanly into an aggregator's.
	v2.Definitions = handler.PruneDefaults(v2.Definitions)
	v3, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{ws}, v3Config())
	if err != nil {
		return nil, fmt.Errorf("metricsapi: building OpenAPI v3: %w", err)
	}
	o := &openAPI{v3: handler3.NewOpenAPIService()}
	o.v3.UpdateGroupVersion(v3DocumentName, v3)
	handler.NewOpenAPIService(v2).RegisterOpenAPIVersionedService("/openapi/v2", pathHandler(func(_ string, h http.Handler) { o.v2 = h }))
	return o, nil
}

// serve answers the OpenAPI paths; false means r is not one of them.
func (o *openAPI) serve(w http.ResponseWriter, r *http.Request) bool {
	switch p := strings.TrimSuffix(r.URL.Path, "/"); {
	case p == "/openapi/v2":
		o.v2.ServeHTTP(w, r)
	case p == "/openapi/v3":
		o.v3.HandleDiscovery(w, r)
	case p == "/openapi/v3/"+v3DocumentName:
		o.v3.HandleGroupVersion(w, r)
	case strings.HasPrefix(p, "/openapi/"):
		http.NotFound(w, r)
	default:
		return false
	}
	return true
}

// kinds are the definitions that are kinds of the group version: the GVK
// extension on them is what kubectl explain looks a kind up by.
var kinds = map[string]string{
	"com.github.kubelab.kubelab.server.metricsapi.NamespaceMetrics":     "NamespaceMetrics",
	"com.github.kubelab.kubelab.server.metricsapi.NamespaceMetricsList": "NamespaceMetricsList",
}

// definitionName names definitions as kube's definition namer does (Go
// package paths turned REST-friendly) and tags the kinds with their GVK.
func definitionName(name string) (string, spec.Extensions) {
	if strings.Contains(name, "/") {
		name = util.ToRESTFriendlyName(name)
	}
	kind, ok := kinds[name]
	if !ok {
		return name, nil
	}
	return name, spec.Extensions{"x-kubernetes-group-version-kind": []interface{}{
		map[string]interface{}{"group": GroupVersion.Group, "version": GroupVersion.Version, "kind": kind},
	}}
}

func operationIDAndTags(r common.Route) (string, []string, error) {
	return r.OperationName(), []string{"metrics_" + GroupVersion.Version}, nil
}

var bearerToken = spec.SecuritySchemeProps{Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication"}

func v2Config() *common.Config {
	return &common.Config{
		ProtocolList:                   []string{"https"},
		Info:                           &spec.Info{InfoProps: spec.InfoProps{Title: "kubelab-metrics", Version: GroupVersion.Version}},
		DefaultResponse:                &spec.Response{ResponseProps: spec.ResponseProps{Description: "Default Response."}},
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              definitionName,
		GetDefinitions:                 GetOpenAPIDefinitions,
		SecurityDefinitions:            &spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: bearerToken}},
		DefaultSecurity:                []map[string][]string{{"BearerToken": {}}},
	}
}

func v3Config() *common.OpenAPIV3Config {
	c := &common.OpenAPIV3Config{
		Info:                           &spec.Info{InfoProps: spec.InfoProps{Title: "kubelab-metrics", Version: GroupVersion.Version}},
		DefaultResponse:                &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Default Response."}},
		CommonResponses:                map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}},
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              definitionName,
		SecuritySchemes: spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
			Type: bearerToken.Type, Name: bearerToken.Name, In: bearerToken.In, Description: bearerToken.Description}}},
		DefaultSecurity: []map[string][]string{{"BearerToken": {}}},
	}
	c.Definitions = GetOpenAPIDefinitions(func(name string) spec.Ref {
		defName, _ := definitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
	return c
}

// routes describe what handler serves, the way kube's installer describes
// a get/list resource to go-restful.
func routes() []common.Route {
	prefix := "/apis/" + GroupVersion.String()
	kind := "NamespaceMetrics"
	gvk := map[string]interface{}{"group": GroupVersion.Group, "version": GroupVersion.Version, "kind": kind}
	produces := []string{"application/json"}
	return []common.Route{
		&route{method: http.MethodGet, path: prefix + "/", operation: "getMetricsV1beta1APIResources",
			doc: "get available resources", produces: produces, writes: metav1.APIResourceList{},
			responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", metav1.APIResourceList{}}}},
		&route{method: http.MethodGet, path: prefix + "/" + resource.Name, operation: "listMetricsV1beta1" + kind,
			doc: "list objects of kind " + kind, produces: produces, writes: NamespaceMetricsList{},
			metadata:  map[string]interface{}{"x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk},
			responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", NamespaceMetricsList{}}}},
		&route{method: http.MethodGet, path: prefix + "/" + resource.Name + "/{name}", operation: "readMetricsV1beta1" + kind,
			doc: "read the specified " + kind, produces: produces, writes: NamespaceMetrics{},
			params:    []common.Parameter{param{name: "name", doc: "name of the " + kind + ", the namespace's name", kind: common.PathParameterKind}},
			metadata:  map[string]interface{}{"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk},
			responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", NamespaceMetrics{}}}},
	}
}

// The types below implement kube-openapi's route description interfaces,
// which kube-apiserver fills from go-restful.

type webService struct {
	rootPath string
	routes   []common.Route
}

func (w *webService) RootPath() string                   { return w.rootPath }
func (w *webService) PathParameters() []common.Parameter { return nil }
func (w *webService) Routes() []common.Route             { return w.routes }

type route struct {
	method, path, operation, doc string
	produces                     []string
	params                       []common.Parameter
	metadata                     map[string]interface{}
	writes                       interface{}
	responses                    []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.operation }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.doc }
func (r *route) Consumes() []string                               { return nil }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.metadata }
func (r *route) RequestPayloadSample() interface{}                { return nil }
func (r *route) ResponsePayloadSample() interface{}               { return r.writes }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

type response struct {
	code    int
	message string
	model   interface{}
}

func (r response) Code() int          { return r.code }
func (r response) Message() string    { return r.message }
func (r response) Model() interface{} { return r.model }

type param struct {
	name, doc string
	kind      common.ParameterKind
}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.doc }
func (p param) Required() bool             { return p.kind == common.PathParameterKind }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return "string" }
func (p param) AllowMultiple() bool        { return false }

// pathHandler takes the handler kube-openapi would register on a mux.
type pathHandler func(path string, h http.Handler)

func (f pathHandler) Handle(path string, h http.Handler) { f(path, h) }
