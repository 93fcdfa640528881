// Package openapi serves the OpenAPI documents kube-apiserver serves for
// kubelab's resources: /openapi/v2 (JSON, or protobuf for kubectl) and
// /openapi/v3 (a discovery document and one document per group version).
// The definitions come from openapi-gen (package generated), the documents
// from kube-openapi's own builders and handlers, fed with routes shaped like
// the ones kube-apiserver's installer registers; the same definitions give
// the server-side apply type converter.
package openapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	crdbuilder "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubelab/kubelab/server/openapi/generated"
)

// Info is the documents' info object.
type Info struct {
	Title   string // "Kubernetes"
	Version string // "v1.37.2"
}

// Service builds and serves the OpenAPI documents for a set of resources.
type Service struct {
	info  Info
	namer *openapinamer.DefinitionNamer
	defs  map[string]bool // names of the generated definitions

	v2        *handler.OpenAPIService
	v2Handler http.Handler
	v3        *handler3.OpenAPIService

	// The v2 document is one for the whole API: the resources' own (base)
	// with each CRD's merged in, as kube-apiserver's CRD OpenAPI
	// controller merges them. Guarded by update.
	base  *spec.Swagger
	crdV2 map[string]*spec.Swagger // by CRD name

	update sync.Mutex // serializes Update

	mu  sync.RWMutex
	gvs map[string]bool // v3 documents being served, by name ("api/v1")
	// extra are v3 documents built elsewhere, such as a CRD's group
	// version; rebuilding the resources' documents leaves them be.
	extra map[string]bool
	tc    managedfields.TypeConverter
}

// documents is everything one resource set yields.
type documents struct {
	v2 *spec.Swagger
	v3 map[string]*spec3.OpenAPI
	tc managedfields.TypeConverter
}

// New builds the documents for resources.
func New(resources []Resource, info Info) (*Service, error) {
	if info.Title == "" {
		info.Title = "Kubernetes"
	}
	if info.Version == "" {
		info.Version = "unversioned" // what kube-apiserver says without version info
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	namer := newDefinitionNamer(scheme)
	s := &Service{info: info, namer: namer, defs: map[string]bool{}, v3: handler3.NewOpenAPIService(), gvs: map[string]bool{}, extra: map[string]bool{}, crdV2: map[string]*spec.Swagger{}}
	for name := range definitions(func(string) spec.Ref { return spec.Ref{} }) {
		s.defs[name] = true
	}
	docs, err := s.build(resources)
	if err != nil {
		return nil, err
	}
	s.base = docs.v2
	s.v2 = handler.NewOpenAPIService(docs.v2)
	s.v2.RegisterOpenAPIVersionedService("/openapi/v2", handlerFunc(func(_ string, h http.Handler) { s.v2Handler = h }))
	s.install(docs)
	return s, nil
}

// Update replaces the resource set and rebuilds every document. On error
// the documents being served are left as they were.
func (s *Service) Update(resources []Resource) error {
	s.update.Lock()
	defer s.update.Unlock()
	docs, err := s.build(resources)
	if err != nil {
		return err
	}
	prev := s.base
	s.base = docs.v2
	if err := s.publishV2Locked(); err != nil {
		s.base = prev
		return err
	}
	s.install(docs)
	return nil
}

// SetV2Spec merges spec, a CRD's OpenAPI v2 document (its served versions'
// definitions and paths) or an aggregated API server's, into /openapi/v2
// under name; nil removes it. kubectl explain and the e2e suite read CRDs'
// and aggregated kinds' schemas from there.
func (s *Service) SetV2Spec(name string, crdSpec *spec.Swagger) error {
	s.update.Lock()
	defer s.update.Unlock()
	prev, had := s.crdV2[name]
	if crdSpec == nil {
		delete(s.crdV2, name)
	} else {
		s.crdV2[name] = crdSpec
	}
	if err := s.publishV2Locked(); err != nil {
		if had {
			s.crdV2[name] = prev
		} else {
			delete(s.crdV2, name)
		}
		return err
	}
	return nil
}

// publishV2Locked serves the base v2 document with every CRD's merged in;
// the base wins any clash, so a CRD cannot shadow a built-in definition.
func (s *Service) publishV2Locked() error {
	names := make([]string, 0, len(s.crdV2))
	for name := range s.crdV2 {
		names = append(names, name)
	}
	sort.Strings(names) // a stable document, and so a stable ETag
	specs := make([]*spec.Swagger, 0, len(names))
	for _, name := range names {
		specs = append(specs, s.crdV2[name])
	}
	merged, err := crdbuilder.MergeSpecs(s.base, specs...)
	if err != nil {
		return fmt.Errorf("openapi: merging CRDs into v2: %w", err)
	}
	if err := s.v2.UpdateSpec(merged); err != nil {
		return fmt.Errorf("openapi: updating v2: %w", err)
	}
	return nil
}

// TypeConverter converts the served kinds to and from structured-merge-diff
// typed values, for server-side apply and managedFields.
func (s *Service) TypeConverter() managedfields.TypeConverter {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tc
}

// Register serves GET (and HEAD) /openapi/v2, /openapi/v3 and
// /openapi/v3/<group version> on e.
func (s *Service) Register(e *echo.Echo) {
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, "/openapi/v2", echo.WrapHandler(s.v2Handler))
	e.Match(methods, "/openapi/v3", echo.WrapHandler(http.HandlerFunc(s.v3.HandleDiscovery)))
	e.Match(methods, "/openapi/v3/*", func(c echo.Context) error {
		// handler3 answers an unknown group version with an empty 200; a
		// 404 (through the server's error handler) is what clients expect.
		s.mu.RLock()
		known := s.gvs[strings.TrimSuffix(c.Param("*"), "/")]
		s.mu.RUnlock()
		if !known {
			return echo.ErrNotFound
		}
		s.v3.HandleGroupVersion(c.Response(), c.Request())
		return nil
	})
}

// install publishes a built set of v3 documents and type converter.
func (s *Service) install(docs *documents) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, doc := range docs.v3 {
		s.v3.UpdateGroupVersion(name, doc)
	}
	for name := range s.gvs {
		if docs.v3[name] == nil && !s.extra[name] {
			s.v3.DeleteGroupVersion(name)
		}
	}
	s.gvs = map[string]bool{}
	for name := range docs.v3 {
		s.gvs[name] = true
	}
	for name := range s.extra {
		s.gvs[name] = true
	}
	s.tc = docs.tc
}

// SetDocument serves doc as the v3 document name ("apis/<group>/<version>")
// beside the resources' own, as kube-apiserver serves a CRD's group
// version; a nil doc stops serving it. It does not touch a document the
// resource set builds.
func (s *Service) SetDocument(name string, doc *spec3.OpenAPI) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if doc == nil {
		if s.extra[name] {
			delete(s.extra, name)
			delete(s.gvs, name)
			s.v3.DeleteGroupVersion(name)
		}
		return
	}
	s.extra[name] = true
	s.gvs[name] = true
	s.v3.UpdateGroupVersion(name, doc)
}

// build makes every document for resources, without publishing anything.
func (s *Service) build(resources []Resource) (*documents, error) {
	m, err := buildModel(resources, s.defs, s.namer)
	if err != nil {
		return nil, err
	}
	containers := make([]common.RouteContainer, len(m.services))
	for i, ws := range m.services {
		containers[i] = ws
	}
	v2, err := builder.BuildOpenAPISpecFromRoutes(containers, s.v2Config())
	if err != nil {
		return nil, fmt.Errorf("openapi: building v2: %w", err)
	}
	v2.Definitions = handler.PruneDefaults(v2.Definitions) // as kube-apiserver does for v2
	docs := &documents{v2: v2, v3: map[string]*spec3.OpenAPI{}}
	for _, ws := range m.services {
		// One v3 document per web service, named by its root path.
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{ws}, s.v3Config())
		if err != nil {
			return nil, fmt.Errorf("openapi: building v3 %s: %w", ws.rootPath, err)
		}
		name := strings.TrimPrefix(ws.rootPath, "/")
		if group, version, ok := groupVersionFromPath(name); ok {
			scopeGVKs(doc.Components.Schemas, group, version)
		}
		docs.v3[name] = doc
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(s.v3Config(), m.models...)
	if err != nil {
		return nil, fmt.Errorf("openapi: building type converter schemas: %w", err)
	}
	if docs.tc, err = managedfields.NewTypeConverter(schemas, false); err != nil {
		return nil, fmt.Errorf("openapi: building type converter: %w", err)
	}
	return docs, nil
}

// definitions is the generated definitions. Each build gets a fresh copy
// (it takes a few milliseconds) because the builders write the GVK
// extension into the definitions' extension maps.
func definitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	return generated.GetOpenAPIDefinitions(ref)
}

// bearerToken is the security scheme kube-apiserver documents; kubelab
// authenticates API clients with bearer tokens too.
var bearerToken = spec.SecuritySchemeProps{
	Type:        "apiKey",
	Name:        "authorization",
	In:          "header",
	Description: "Bearer Token authentication",
}

// v2Config is kube-apiserver's OpenAPI v2 configuration, completed the way
// its generic server completes it when authentication is on.
func (s *Service) v2Config() *common.Config {
	return &common.Config{
		ProtocolList:                   []string{"https"},
		IgnorePrefixes:                 []string{},
		Info:                           &spec.Info{InfoProps: spec.InfoProps{Title: s.info.Title, Version: s.info.Version}},
		DefaultResponse:                &spec.Response{ResponseProps: spec.ResponseProps{Description: "Default Response."}},
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              s.namer.GetDefinitionName,
		GetDefinitions:                 definitions,
		SecurityDefinitions:            &spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: bearerToken}},
		DefaultSecurity:                []map[string][]string{{"BearerToken": {}}},
	}
}

// v3Config is the OpenAPI v3 counterpart of v2Config.
func (s *Service) v3Config() *common.OpenAPIV3Config {
	c := &common.OpenAPIV3Config{
		IgnorePrefixes:                 []string{},
		Info:                           &spec.Info{InfoProps: spec.InfoProps{Title: s.info.Title, Version: s.info.Version}},
		DefaultResponse:                &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Default Response."}},
		CommonResponses:                map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}},
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              s.namer.GetDefinitionName,
		SecuritySchemes:                spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{Type: bearerToken.Type, Name: bearerToken.Name, In: bearerToken.In, Description: bearerToken.Description}}},
		DefaultSecurity:                []map[string][]string{{"BearerToken": {}}},
	}
	c.Definitions = definitions(func(name string) spec.Ref {
		defName, _ := c.GetDefinitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
	return c
}

// handlerFunc adapts a function to common.PathHandler, to take the v2
// handler kube-openapi would register on a mux and mount it on Echo.
type handlerFunc func(path string, h http.Handler)

func (f handlerFunc) Handle(path string, h http.Handler) { f(path, h) }
