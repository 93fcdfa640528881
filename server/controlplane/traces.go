package controlplane

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	genericregistry "k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/kubelab/kubelab/pipeline"
)

// The kube core's traces: one pipeline.Trace per request through
// kubelab's front door, in the shape kubelab's own core publishes, with
// kube's own stages taken from kube's public hooks:
//   - the handler chain (BuildHandlerChainFunc), outside WithAuditInit:
//     the trace begins, keyed by the request's Audit-ID, and is published
//     with its status code once answered;
//   - a decorator of the authenticator and one of the authorizer;
//   - an admission decorator, around each plugin by its own name;
//   - a decorator of the storage each resource's REST options make: the
//     etcd write and the resourceVersion it made.
//
// Requests of kube's own loopback client (the controllers, the node) are
// not traced: kubelab's own core does not trace its controllers either.

type traceKey struct{}

// requestTrace is a request's trace while it is served. The stages may
// record from other goroutines than the request's (kube's timeout filter
// runs the handler in one of its own).
type requestTrace struct {
	mu    sync.Mutex
	t     pipeline.Trace
	start time.Time
}

func traceOf(ctx context.Context) *requestTrace {
	t, _ := ctx.Value(traceKey{}).(*requestTrace)
	return t
}

func (rt *requestTrace) add(r pipeline.Record) {
	if rt == nil {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.t.Records = append(rt.t.Records, r)
}

// describe fills in what the request was, from its authorization's
// attributes: who, which verb, on what.
func (rt *requestTrace) describe(a authorizer.Attributes) {
	if rt == nil {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if u := a.GetUser(); u != nil {
		rt.t.User = u.GetName()
	}
	rt.t.Verb = a.GetVerb()
	rt.t.APIGroup, rt.t.Resource, rt.t.Subresource = a.GetAPIGroup(), a.GetResource(), a.GetSubresource()
	rt.t.Namespace, rt.t.Name = a.GetNamespace(), a.GetName()
}

// named fills in the name of the object a create makes, which its
// authorization's attributes do not carry (the URL names no object).
func (rt *requestTrace) named(name string) {
	if rt == nil || name == "" {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.t.Name == "" {
		rt.t.Name = name
	}
}

// traceRequests is the outermost filter of kube-apiserver's handler chain.
func traceRequests(publish func(pipeline.Trace), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !cameThroughFrontDoor(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		// kube's WithAuditInit keeps a client's Audit-ID; one is given here
		// so that the trace and kube's audit share it.
		id := r.Header.Get(pipeline.TraceHeader)
		if id == "" {
			id = pipeline.NewTraceID()
			r.Header.Set(pipeline.TraceHeader, id)
		}
		rt := &requestTrace{start: time.Now(), t: pipeline.Trace{ID: id, Path: r.URL.Path, Records: []pipeline.Record{}, Source: pipeline.SourceFrom(r.Context())}}
		rt.t.Time = rt.start
		status := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(status), r.WithContext(context.WithValue(r.Context(), traceKey{}, rt)))
		rt.mu.Lock()
		t := rt.t
		t.Records = append([]pipeline.Record(nil), rt.t.Records...)
		rt.mu.Unlock()
		t.Code, t.Duration = status.code, time.Since(rt.start)
		publish(t)
	})
}

// statusWriter remembers the status code of the answer. kube's own
// wrapper (WrapForHTTP1Or2) keeps the connection's Flusher, Hijacker and
// CloseNotifier in view, which watches and exec need.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// tracedAuthenticator records the authentication stage.
func tracedAuthenticator(inner authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		start := time.Now()
		resp, ok, err := inner.AuthenticateRequest(r)
		rec := pipeline.Record{Stage: pipeline.StageAuthentication, Decision: pipeline.Allow, Duration: time.Since(start)}
		switch {
		case err != nil:
			rec.Decision, rec.Reason = pipeline.Deny, err.Error()
		case !ok:
			rec.Decision, rec.Reason = pipeline.Deny, "no credentials kube accepts"
		default:
			rec.Reason = resp.User.GetName()
		}
		traceOf(r.Context()).add(rec)
		return resp, ok, err
	})
}

// tracedAuthorizer records the authorization stage, and what was asked.
func tracedAuthorizer(inner authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		start := time.Now()
		decision, reason, err := inner.Authorize(ctx, a)
		rt := traceOf(ctx)
		rt.describe(a)
		rec := pipeline.Record{Stage: pipeline.StageAuthorization, Decision: pipeline.Deny, Reason: reason, Duration: time.Since(start)}
		if decision == authorizer.DecisionAllow {
			rec.Decision = pipeline.Allow
		}
		if err != nil {
			rec.Decision, rec.Reason = pipeline.Error, err.Error()
		}
		rt.add(rec)
		return decision, reason, err
	})
}

// tracedAdmission is an admission decorator: each plugin's part, by the
// plugin's own name. It must wrap the plugin itself (the first decorator),
// since kube's metrics decorator hides whether a plugin mutates.
var tracedAdmission = admission.DecoratorFunc(func(plugin admission.Interface, name string) admission.Interface {
	return tracedPlugin{Interface: plugin, name: name}
})

type tracedPlugin struct {
	admission.Interface
	name string
}

func (p tracedPlugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := p.Interface.(admission.MutationInterface)
	if !ok {
		return nil
	}
	traceOf(ctx).named(a.GetName())
	var before runtime.Object
	if obj := a.GetObject(); obj != nil {
		before = obj.DeepCopyObject()
	}
	start := time.Now()
	err := m.Admit(ctx, a, o)
	rec := pluginRecord(pipeline.StageMutatingAdmission, p.name, err, time.Since(start))
	if err == nil && before != nil && !equality.Semantic.DeepEqual(before, a.GetObject()) {
		rec.Decision = pipeline.Mutate
	}
	traceOf(ctx).add(rec)
	return err
}

func (p tracedPlugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := p.Interface.(admission.ValidationInterface)
	if !ok {
		return nil
	}
	traceOf(ctx).named(a.GetName())
	start := time.Now()
	err := v.Validate(ctx, a, o)
	traceOf(ctx).add(pluginRecord(pipeline.StageValidatingAdmission, p.name, err, time.Since(start)))
	return err
}

func pluginRecord(stage pipeline.Stage, plugin string, err error, took time.Duration) pipeline.Record {
	rec := pipeline.Record{Stage: stage, Plugin: plugin, Decision: pipeline.Allow, Duration: took}
	if err != nil {
		rec.Decision, rec.Reason = pipeline.Deny, err.Error()
	}
	return rec
}

// tracedRESTOptions decorates every resource's storage with tracedStorage.
type tracedRESTOptions struct {
	genericregistry.RESTOptionsGetter
}

func (g tracedRESTOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (genericregistry.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, prefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, attrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, prefix, keyFunc, newFunc, newListFunc, attrs, trigger, indexers)
		if err != nil {
			return s, destroy, err
		}
		return tracedStorage{Interface: s}, destroy, nil
	}
	return opts, nil
}

// tracedStorage records each write to etcd, and the resourceVersion it made.
type tracedStorage struct {
	storage.Interface
}

func (s tracedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	start := time.Now()
	err := s.Interface.Create(ctx, key, obj, out, ttl)
	traceOf(ctx).add(written("create "+key, out, err, time.Since(start)))
	return err
}

func (s tracedStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	start := time.Now()
	err := s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
	traceOf(ctx).add(written("delete "+key, out, err, time.Since(start)))
	return err
}

func (s tracedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	start := time.Now()
	err := s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	traceOf(ctx).add(written("update "+key, destination, err, time.Since(start)))
	return err
}

// written is the storage stage's record of a write of key.
func written(what string, out runtime.Object, err error, took time.Duration) pipeline.Record {
	rec := pipeline.Record{Stage: pipeline.StageStorage, Decision: pipeline.Allow, Reason: what, Duration: took}
	if err != nil {
		rec.Decision, rec.Reason = pipeline.Error, what+": "+err.Error()
		return rec
	}
	if m, merr := meta.Accessor(out); merr == nil {
		rec.ResourceVersion = m.GetResourceVersion()
	}
	return rec
}

// traceServers adds the hooks to kube-apiserver's three servers'
// configurations: the aggregator's handler chain serves every request
// (the others are reached through it, past their own chains), and each
// server keeps its own storage and authorization.
func traceServers(publish func(pipeline.Trace), configs ...*genericapiserver.Config) {
	for i, c := range configs {
		c.Authentication.Authenticator = tracedAuthenticator(c.Authentication.Authenticator)
		c.Authorization.Authorizer = tracedAuthorizer(c.Authorization.Authorizer)
		if c.RESTOptionsGetter != nil {
			c.RESTOptionsGetter = tracedRESTOptions{c.RESTOptionsGetter}
		}
		if i == len(configs)-1 {
			build := c.BuildHandlerChainFunc
			c.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
				return traceRequests(publish, build(h, c))
			}
		}
	}
}
