package kubeapi

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline"
)

// SetPipeline puts the request pipeline (authorization and admission; the
// server's front door authenticates) in front of every resource. Without
// one, every request is allowed and admitted, as in unit tests of the API.
func (a *API) SetPipeline(p *pipeline.Pipeline) { a.pipeline = p }

// stages is one request's view of the pipeline: its trace and user, from
// the server's front door.
type stages struct {
	p     *pipeline.Pipeline
	trace *pipeline.Trace
	user  pipeline.User
}

func (a *API) stagesFor(r *http.Request) stages {
	tr, user, ok := pipeline.FromContext(r.Context())
	if !ok || a.pipeline == nil {
		return stages{}
	}
	return stages{p: a.pipeline, trace: tr, user: user}
}

func (s stages) on() bool { return s.p != nil }

// authorizePath authorizes a non-resource request such as discovery.
func (s stages) authorizePath(r *http.Request) error {
	if !s.on() {
		return nil
	}
	verb := strings.ToLower(r.Method)
	if verb == "head" {
		verb = "get"
	}
	attrs := &pipeline.Attributes{User: s.user, Verb: verb, Path: r.URL.Path}
	s.trace.Describe(attrs)
	return s.p.Authorize(s.trace, attrs)
}

// attributes describes a resource request as authorization and admission
// see it. As in kube-apiserver, a namespace object's own namespace is its name.
func (r *request) attributes() *pipeline.Attributes {
	a := &pipeline.Attributes{
		User: r.stages.user, Verb: r.info.Verb, Operation: pipeline.OperationFor(r.info.Verb), IsResourceRequest: true,
		Path: r.c.Request().URL.Path, APIGroup: r.res.GroupVersion.Group, APIVersion: r.res.GroupVersion.Version,
		Resource: r.res.Name, Subresource: r.info.Subresource, Namespace: r.info.Namespace, Name: r.info.Name,
		Kind: r.res.GroupVersionKind(), DryRun: r.dryRun(),
	}
	if r.res.Name == "namespaces" && r.info.Name != "" {
		a.Namespace = r.info.Name
	}
	return a
}

func (r *request) authorize() error {
	if !r.stages.on() {
		return nil
	}
	r.attrs = r.attributes()
	r.stages.trace.Describe(r.attrs)
	return r.stages.p.Authorize(r.stages.trace, r.attrs)
}

// admit runs mutating admission, the kind's validation, then validating
// admission on obj, in the lesson's order, each recorded in the trace.
// old is nil for a create.
func (r *request) admitAndValidate(obj, old runtime.Object) error {
	if !r.stages.on() {
		return r.validate(obj, old)
	}
	a := *r.attrs
	a.Object, a.OldObject = obj, old
	if old == nil {
		a.Name = "" // as in kube-apiserver, a create is not yet named for admission
	}
	if err := r.stages.p.Admit(r.ctx(), r.stages.trace, &a); err != nil {
		return err
	}
	if err := r.stages.trace.Run(pipeline.StageValidation, "", func() error { return r.validate(obj, old) }); err != nil {
		return err
	}
	return r.stages.p.Validate(r.ctx(), r.stages.trace, &a)
}

// admitDelete lets admission see an object about to be deleted.
func (r *request) admitDelete(old runtime.Object) error {
	if !r.stages.on() {
		return nil
	}
	a := *r.attrs
	a.OldObject = old
	return r.stages.p.Admit(r.ctx(), r.stages.trace, &a)
}

// stored records the storage stage: what etcd did and at which revision.
func (r *request) stored(obj runtime.Object, err error) {
	if !r.stages.on() {
		return
	}
	sw := pipeline.StartStage(pipeline.StageStorage, "etcd")
	rec := sw.Done(err)
	if err == nil && obj != nil {
		rec.ResourceVersion = resourceVersionOf(obj)
	}
	if r.dryRun() && err == nil {
		rec.Reason = "dryRun: nothing written"
	}
	r.stages.trace.Add(rec)
}

// mark and rewind let a write that retries on fresh state drop the records
// of the try that lost.
func (r *request) mark() int {
	if !r.stages.on() {
		return 0
	}
	return r.stages.trace.Mark()
}

func (r *request) rewind(mark int) {
	if r.stages.on() {
		r.stages.trace.Rewind(mark)
	}
}
