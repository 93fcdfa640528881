package server

import (
	"context"
	"encoding/hex"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server/frontdoor"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/webui"
)

// AdminUser is the local user of the admin kubeconfig: cluster-admin
// through system:masters, as on a kind cluster.
var AdminUser = pipeline.User{Name: "kubelab-admin", Groups: []string{pipeline.SystemPrivilegedGroup}}

// InstructorUser and GraderUser are who --instructor-token and
// --grader-token authenticate as.
var (
	InstructorUser = pipeline.User{Name: "kubelab-instructor", Groups: []string{classroom.InstructorGroup, pipeline.AllAuthenticated}}
	GraderUser     = pipeline.User{Name: "kubelab-grader", Groups: []string{classroom.GraderGroup, pipeline.AllAuthenticated}}
)

// buildPipeline assembles the lesson's pipeline over the API's stores
// (frontdoor.Assemble) with kubelab's static tokens. Its caches stop
// when shutdown begins.
func (s *Server) buildPipeline(ctx context.Context, api *kubeapi.API) (*frontdoor.FrontDoor, error) {
	static := authn.NewStaticTokens()
	static.AddHash(hex.EncodeToString(s.adminTokenHash[:]), AdminUser)
	if s.cfg.InstructorToken != "" {
		static.AddToken(s.cfg.InstructorToken, InstructorUser)
	}
	if s.cfg.GraderToken != "" {
		static.AddToken(s.cfg.GraderToken, GraderUser)
	}
	// The caches stop when shutdown begins, before the stores they read do,
	// so stopping is quiet (hooks run in reverse order of registration).
	cachesCtx, stopCaches := context.WithCancel(s.backgroundCtx)
	s.OnShutdown(func(context.Context) { stopCaches() })
	fd, err := frontdoor.Assemble(ctx, cachesCtx, frontdoor.Config{
		API: api, Etcd: s.etcd.Client(), Tokens: static, Classroom: s.cfg.Classroom, Logger: s.log,
		FromView: webui.FromView(s.viewKey), Observe: s.observe,
	})
	if err != nil {
		return nil, err
	}
	s.traces, s.authn, s.authz, s.nsCache, s.quotas = fd.Traces, fd.Authn, fd.Authz, fd.Namespaces, fd.Quotas
	// The controllers start once the system objects exist (startKeepers):
	// what they write is admitted, and admission refuses objects in a
	// namespace that does not exist yet (the node's lease's).
	s.startControllersLater = func() { s.startControllers(cachesCtx, api, fd.Quotas) }
	return fd, nil
}
