// Package frontdoor is the request pipeline kubelab serves with, and the
// door every request comes in by: it assembles the lesson's pipeline over
// the API's stores (bearer tokens, RBAC with kube's default policy,
// admission with namespace lifecycle, limits and quotas, the trace bus),
// and its middleware authenticates each request, impersonates, authorizes
// kube's non-resource paths and publishes the trace once it is answered.
// The server serves with it, and tests of the pipeline start it over the
// API alone, so both meet one pipeline.
package frontdoor

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/pipeline/trace"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// SyncTimeout bounds a wait on the front door's caches: Assemble's for their
// first read of etcd, and one for them to see a write (a student joining).
const SyncTimeout = 30 * time.Second

// Config is what the pipeline is assembled from.
type Config struct {
	API *kubeapi.API
	// Etcd keeps the tokens kubelab mints (sign-ins, dashboards).
	Etcd *clientv3.Client
	// Tokens are the static ones: the admin kubeconfig's, the
	// instructor's and the grader's.
	Tokens *authn.StaticTokens
	// Classroom is classroom mode: anonymous requests are no one's, and a
	// browser that has not joined the class is sent to join. Otherwise
	// (local mode) anonymous requests are cluster-admin, through
	// LocalModeBinding, as on a kind cluster.
	Classroom bool
	Logger    *slog.Logger

	// FromView, if set, marks a request one of the web UI's views sent
	// (pipeline.WithSource) before it is traced.
	FromView func(*http.Request) *http.Request
	// Observe, if set, is told of every request once it is answered:
	// metrics and the request log.
	Observe func(ctx context.Context, tr *pipeline.Trace, method string, code int)
}

// FrontDoor is the assembled pipeline and the caches it decides from.
type FrontDoor struct {
	cfg        Config
	Pipeline   *pipeline.Pipeline
	Traces     *trace.Bus
	Authn      *authn.Authenticator
	Authz      *rbac.Authorizer
	Namespaces *admission.NamespaceCache
	Quotas     *QuotaStore
}

// Assemble writes kube's bootstrap policy and the local-mode binding (or
// removes it, for a class), starts the caches the pipeline decides from
// until caches ends, and returns once they have read etcd (ctx bounds
// that wait). The API traces its writes from the start, before RBAC and
// admission exist; it has the whole pipeline once the caller sets it
// (kubeapi.API.SetPipeline), when its routes are ready to be guarded.
func Assemble(ctx, caches context.Context, cfg Config) (*FrontDoor, error) {
	api := cfg.API
	store := func(gv schema.GroupVersion, resource string) rbac.Source {
		st, _ := api.Store(gv.WithResource(resource))
		return st
	}
	roles, clusterRoles := store(rbacv1.SchemeGroupVersion, "roles"), store(rbacv1.SchemeGroupVersion, "clusterroles")
	bindings, clusterBindings := store(rbacv1.SchemeGroupVersion, "rolebindings"), store(rbacv1.SchemeGroupVersion, "clusterrolebindings")
	namespaces, _ := api.Store(corev1.SchemeGroupVersion.WithResource("namespaces"))

	// The trace bus comes first: kube-apiserver's own writes at start
	// (the bootstrap policy) are traced like any other, before RBAC and
	// admission exist to stand in their way.
	fd := &FrontDoor{cfg: cfg, Traces: trace.NewBus(trace.Config{})}
	api.SetPipeline(&pipeline.Pipeline{Traces: fd.Traces})
	startCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	asAPIServer := registry.WithUser(startCtx, registry.APIServer)
	reg := api.Registry()
	if err := rbac.EnsureBootstrapPolicy(asAPIServer, creator(reg, rbacv1.SchemeGroupVersion.WithResource("clusterroles")),
		creator(reg, rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))); err != nil {
		return nil, err
	}
	if err := setLocalModeBinding(asAPIServer, reg, !cfg.Classroom); err != nil {
		return nil, err
	}
	fd.Authz = rbac.New(rbac.Sources{Roles: roles, RoleBindings: bindings, ClusterRoles: clusterRoles, ClusterRoleBindings: clusterBindings}, cfg.Logger)
	fd.Authz.Start(caches)
	fd.Quotas = startQuotas(caches, api, cfg.Logger)
	fd.Namespaces = admission.NewNamespaceCache(namespaces, namespaces)
	fd.Namespaces.Start(caches)
	if err := errors.Join(fd.Authz.WaitForSync(startCtx), fd.Namespaces.WaitForSync(startCtx), fd.Quotas.WaitForSync(startCtx)); err != nil {
		return nil, err
	}

	fd.Authn = authn.New(authn.Config{Static: cfg.Tokens, Store: authn.NewEtcdTokens(cfg.Etcd)})
	fd.Pipeline = &pipeline.Pipeline{
		Authn: fd.Authn,
		Authz: fd.Authz,
		Admission: &admission.Chain{
			Mutating: []admission.MutatingPlugin{admission.NewNamespaceLifecycle(fd.Namespaces), admission.ServiceAccount{}, admission.DefaultTolerationSeconds{}},
			Validating: []admission.ValidatingPlugin{&admission.RequireLimits{Namespaces: fd.Namespaces},
				&admission.ResourceQuota{Quotas: fd.Quotas, Usage: Usage{API: api}}},
		},
		Traces: fd.Traces,
	}
	return fd, nil
}
