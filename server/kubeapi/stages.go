package kubeapi

import (
	"net/http"
	"strings"

	"github.com/kubelab/kubelab/pipeline"
)

// SetPipeline puts the request pipeline (authorization and admission; the
// server's front door authenticates) in front of every resource. Without
// one, every request is allowed and admitted, as in unit tests of the API.
func (a *API) SetPipeline(p *pipeline.Pipeline) {
	a.pipeline = p
	a.registry.SetPipeline(p)
}

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
// see it: the registry's attributes of the call, at the request's path.
func (r *request) attributes() *pipeline.Attributes {
	a := r.res.Attributes(r.stages.user, r.info.Verb, r.info.Subresource, r.key(), r.dryRun())
	a.Path = r.c.Request().URL.Path
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
