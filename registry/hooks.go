package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/storage"
)

// op is one call on a store as the pipeline sees it: who makes it, its
// attributes and the trace its stages are recorded in. Without a
// pipeline (unit tests of the API) it records nothing and allows all.
type op struct {
	p      *pipeline.Pipeline
	ctx    context.Context
	trace  *pipeline.Trace
	attrs  *pipeline.Attributes
	dryRun bool
	// own: the trace is the op's, published when it ends (an in-process
	// caller); otherwise the front door publishes the request's.
	own bool
}

// errNoIdentity: with the pipeline on, every call must say who makes it.
var errNoIdentity = errors.New("registry: a call with no user (use WithUser, or go through the API)")

// begin starts a call of verb on k: from the REST handler, it joins the
// request's trace (authorized already); from an in-process caller, it
// starts a trace of its own as the caller's user and authorizes it.
func (s *Store) begin(ctx context.Context, verb, subresource string, k storage.Key, dryRun bool) (*op, error) {
	p := s.reg.stages()
	o := &op{p: p, ctx: ctx, dryRun: dryRun}
	if req, ok := ctx.Value(requestKey{}).(handled); ok && req.attrs != nil {
		a := *req.attrs
		o.trace, o.attrs = req.trace, &a
		if o.trace == nil {
			o.p = nil // served without the pipeline
		}
		return o, nil
	}
	if p == nil {
		return o, nil
	}
	u, ok := ctx.Value(userKey{}).(pipeline.User)
	if !ok {
		if _, u, ok = pipeline.FromContext(ctx); !ok {
			return nil, apierrors.NewInternalError(errNoIdentity)
		}
	}
	o.attrs = s.Resource.Attributes(u, verb, subresource, k, dryRun)
	o.attrs.Path = s.path(k, subresource)
	o.trace = &pipeline.Trace{ID: pipeline.NewTraceID(), Time: time.Now(), Records: make([]pipeline.Record, 0, 8), Source: pipeline.SourceFrom(ctx)}
	o.trace.Describe(o.attrs)
	// Writes are traced whoever makes them; reads only when made for a
	// browser's view (a timeline lane's list and watch), which shows them
	// as it showed them over HTTP: kubelab's own components read far too
	// often for a trace each.
	o.own = pipeline.OperationFor(verb) != "" || o.trace.Source != ""
	if err := p.Authorize(o.trace, o.attrs); err != nil {
		o.finish(err)
		return nil, err
	}
	return o, nil
}

// path is the URL of k over HTTP, for the trace.
func (s *Store) path(k storage.Key, subresource string) string {
	r := s.Resource
	parts := []string{"/apis", r.GroupVersion.Group, r.GroupVersion.Version}
	if r.GroupVersion.Group == "" {
		parts = []string{"/api", r.GroupVersion.Version}
	}
	if r.Namespaced && k.Namespace != "" {
		parts = append(parts, "namespaces", k.Namespace)
	}
	parts = append(parts, r.Name)
	if k.Name != "" {
		parts = append(parts, k.Name)
	}
	if subresource != "" {
		parts = append(parts, subresource)
	}
	return strings.Join(parts, "/")
}

func (o *op) on() bool { return o.p != nil }

// admitAndValidate runs mutating admission, the kind's validation, then
// validating admission on obj, in the lesson's order, each recorded in
// the trace. old is nil for a create.
func (o *op) admitAndValidate(s *Store, obj, old runtime.Object) error {
	if !o.on() {
		return s.validate(obj, old)
	}
	a := *o.attrs
	a.Object, a.OldObject = obj, old
	if old == nil {
		a.Operation = pipeline.Create
		a.Name = "" // as in kube-apiserver, a create is not yet named for admission
	}
	if err := o.p.Admit(o.ctx, o.trace, &a); err != nil {
		return err
	}
	if err := o.trace.Run(pipeline.StageValidation, "", func() error { return s.validate(obj, old) }); err != nil {
		return err
	}
	return o.p.Validate(o.ctx, o.trace, &a)
}

// admitDelete lets admission see an object about to be deleted.
func (o *op) admitDelete(old runtime.Object) error {
	if !o.on() {
		return nil
	}
	a := *o.attrs
	a.OldObject = old
	return o.p.Admit(o.ctx, o.trace, &a)
}

// storageCall times one call to storage for the trace's storage stage.
type storageCall struct {
	o     *op
	start time.Time
	mark  int
}

// storing starts timing a call to storage: the stopwatch runs around the
// etcd call itself, not after it.
func (o *op) storing() storageCall {
	return storageCall{o: o, start: time.Now(), mark: o.mark()}
}

// done records the storage stage: how long the call took, what it
// answered and at which revision. An update's call runs admission and
// validation again on fresh state inside it; their stages, recorded
// meanwhile, are not counted twice.
func (c storageCall) done(rv string, err error) {
	o := c.o
	if !o.on() {
		return
	}
	took := time.Since(c.start)
	for _, r := range o.trace.Records[min(c.mark, len(o.trace.Records)):] {
		took -= r.Duration
	}
	rec := pipeline.StartStage(pipeline.StageStorage, "etcd").Done(err)
	rec.Duration = max(took, 0)
	if err == nil {
		rec.ResourceVersion = rv
	}
	if o.dryRun && err == nil {
		rec.Reason = "dryRun: nothing written"
	}
	o.trace.Add(rec)
}

// rvOf is obj's resourceVersion, or "".
func rvOf(obj runtime.Object) string {
	if obj == nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// mark and rewind let a write that retries on fresh state drop the records
// of the try that lost.
func (o *op) mark() int {
	if !o.on() {
		return 0
	}
	return o.trace.Mark()
}

func (o *op) rewind(mark int) {
	if o.on() {
		o.trace.Rewind(mark)
	}
}

// finish publishes an in-process call's trace with the code the same
// call over HTTP would have got; err is returned unchanged.
func (o *op) finish(err error) error {
	if !o.on() || !o.own {
		return err
	}
	code := http.StatusOK
	if o.attrs.Verb == "create" {
		code = http.StatusCreated
	}
	if err != nil {
		code = http.StatusInternalServerError
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			code = int(st.Status().Code)
		}
	}
	o.p.Finish(o.trace, code)
	o.own = false
	return err
}
