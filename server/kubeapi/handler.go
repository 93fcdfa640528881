// Package kubeapi serves the Kubernetes REST API over kubelab's storage:
// discovery, CRUD, PATCH, watch, Tables and Status errors, with one
// generic handler for every resource in the registry.
package kubeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// MaxBodyBytes is kube-apiserver's limit on a request body: 3 MiB.
const MaxBodyBytes = 3 << 20

// API is the Kubernetes REST API over the registry: it decodes requests,
// calls the resource's store, negotiates and encodes the answer.
type API struct {
	registry *registry.Registry
	// mu guards aggregator, set while serving.
	mu sync.RWMutex
	// aggregator serves the group versions handed to other servers.
	aggregator Aggregator
	encoded    *encodeCache
	pipeline   *pipeline.Pipeline
	log        *slog.Logger
}

// New opens the registry: a store (and so a watch cache) for every resource.
func New(cfg registry.Config) (*API, error) {
	reg, err := registry.New(cfg)
	if err != nil {
		return nil, err
	}
	return &API{registry: reg, encoded: newEncodeCache(), log: reg.Logger()}, nil
}

// Registry is the set of resources served, each with its store.
func (a *API) Registry() *Registry { return a.registry }

// Install routes /api, /apis and /version to the API.
func (a *API) Install(e *echo.Echo) {
	for _, p := range []string{"/api", "/api/*", "/apis", "/apis/*"} {
		e.Any(p, a.serve)
	}
	e.GET("/version", a.serveVersion)
}

// serve is the one handler behind every resource.
func (a *API) serve(c echo.Context) error {
	info := parseRequestInfo(c.Request())
	if info == nil {
		return notFound()
	}
	st := a.stagesFor(c.Request())
	if ok, err := a.proxied(c, info, st); ok {
		return err
	}
	if info.Resource == "" {
		if err := st.authorizePath(c.Request()); err != nil {
			return err
		}
		return a.serveDiscovery(c, info)
	}
	gvr := info.GroupVersion.WithResource(info.Resource)
	res, store, ok := a.lookup(gvr)
	if !ok || (info.Namespace != "" && !res.Namespaced) {
		return notFound()
	}
	if !res.Serves(info.Subresource) || (info.Subresource != "" && info.Name == "") {
		return notFound()
	}
	if info.Subresource == "finalize" && info.Verb != "update" {
		return methodNotAllowed()
	}
	req := &request{api: a, c: c, info: info, res: res, store: store, stages: st}
	if err := req.authorize(); err != nil {
		return err
	}
	if res.Review != nil {
		if info.Verb != "create" || info.Name != "" {
			return methodNotAllowed()
		}
		return req.review()
	}
	switch info.Verb {
	case "get":
		return req.get()
	case "list":
		return req.list()
	case "watch":
		return req.watch()
	case "create":
		if info.Name != "" {
			return methodNotAllowed()
		}
		return req.create()
	case "update", "patch":
		if info.Name == "" {
			return methodNotAllowed()
		}
		if info.Verb == "update" {
			return req.update()
		}
		return req.patch()
	case "delete":
		return req.delete()
	case "deletecollection":
		return req.deleteCollection()
	}
	return methodNotAllowed()
}

// request is one API call on one resource.
type request struct {
	api    *API
	c      echo.Context
	info   *requestInfo
	res    *Resource
	store  *registry.Store
	stages stages
	// attrs describe the request to the pipeline, once authorized.
	attrs    *pipeline.Attributes
	storeCtx context.Context
}

// ctx is the request's context, telling the store the request is
// authorized and which trace its stages go into.
func (r *request) ctx() context.Context {
	if r.storeCtx == nil {
		attrs := r.attrs
		if attrs == nil {
			attrs = r.attributes()
		}
		r.storeCtx = registry.WithAuthorizedRequest(r.c.Request().Context(), r.stages.trace, attrs)
	}
	return r.storeCtx
}

func (r *request) query(name string) string { return r.c.QueryParam(name) }

func (r *request) key() storage.Key {
	return storage.Key{Namespace: r.info.Namespace, Name: r.info.Name}
}

// readOptionalBody reads a body that may be empty, at most MaxBodyBytes;
// more is 413, as in kube-apiserver.
func (r *request) readOptionalBody() ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.c.Request().Body, MaxBodyBytes+1))
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, err // the request timeout's 504 (StatusOf)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest("reading the request body: " + err.Error())
	}
	if len(body) > MaxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxBodyBytes))
	}
	return body, nil
}

// readBody is readOptionalBody for a body that must be there.
func (r *request) readBody() ([]byte, error) {
	body, err := r.readOptionalBody()
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	return body, nil
}

// respond writes obj in the format the client accepts.
func (r *request) respond(code int, obj runtime.Object) error {
	out, err := r.negotiate()
	if err != nil {
		return err
	}
	switch out.as {
	case "Table":
		t, err := r.res.ConvertToTable([]runtime.Object{obj}, metav1.ListMeta{ResourceVersion: resourceVersionOf(obj)}, includeObject(r.query("includeObject")), false)
		if err != nil {
			return err
		}
		return writeObject(r.c, code, out.info, out.meta, t)
	case "PartialObjectMetadata":
		return writeObject(r.c, code, out.info, out.meta, partialMetadata(obj))
	case "PartialObjectMetadataList":
		return apierrors.NewBadRequest("PartialObjectMetadataList is only available for lists")
	}
	return writeObject(r.c, code, out.info, r.res.GroupVersion, obj)
}

func writeObject(c echo.Context, code int, info runtime.SerializerInfo, gv schema.GroupVersion, obj runtime.Object) error {
	var buf bytes.Buffer
	if err := encode(info.Serializer, gv, obj, &buf); err != nil {
		return err
	}
	return c.Blob(code, info.MediaType, buf.Bytes())
}

// encode writes obj at version gv. Custom resources are unstructured and
// already carry their apiVersion; they skip the scheme, which does not
// know their kinds.
func encode(s runtime.Encoder, gv schema.GroupVersion, obj runtime.Object, w io.Writer) error {
	if _, ok := obj.(runtime.Unstructured); ok {
		return s.Encode(obj, w)
	}
	return Codecs.EncoderForVersion(s, gv).Encode(obj, w)
}

func includeObject(v string) metav1.IncludeObjectPolicy {
	switch p := metav1.IncludeObjectPolicy(v); p {
	case metav1.IncludeNone, metav1.IncludeObject, metav1.IncludeMetadata:
		return p
	}
	return metav1.IncludeMetadata
}

// notFound and methodNotAllowed leave the Status to the server's one error
// handler, which words them as kube-apiserver does.
func notFound() error { return echo.ErrNotFound }

func methodNotAllowed() error { return echo.ErrMethodNotAllowed }
