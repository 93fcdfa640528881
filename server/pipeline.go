package server

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/pipeline/trace"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
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

// syncTimeout bounds how long start-up waits for the RBAC and namespace
// caches to read etcd.
const syncTimeout = 30 * time.Second

// buildPipeline assembles the lesson's pipeline over the API's stores:
// bearer tokens, RBAC with kube's default policy, and the admission
// plugins. Its caches run until ctx ends.
func (s *Server) buildPipeline(ctx context.Context, api *kubeapi.API) (*pipeline.Pipeline, error) {
	store := func(gv schema.GroupVersion, resource string) *etcd3.Store {
		st, _ := api.Store(gv.WithResource(resource))
		return st
	}
	roles, clusterRoles := store(rbacv1.SchemeGroupVersion, "roles"), store(rbacv1.SchemeGroupVersion, "clusterroles")
	bindings, clusterBindings := store(rbacv1.SchemeGroupVersion, "rolebindings"), store(rbacv1.SchemeGroupVersion, "clusterrolebindings")
	namespaces := store(corev1.SchemeGroupVersion, "namespaces")

	// The trace bus comes first: kube-apiserver's own writes at start
	// (the bootstrap policy) are traced like any other, before RBAC and
	// admission exist to stand in their way.
	s.traces = trace.NewBus(trace.Config{})
	api.SetPipeline(&pipeline.Pipeline{Traces: s.traces})
	startCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	asAPIServer := registry.WithUser(startCtx, registry.APIServer)
	reg := api.Registry()
	if err := rbac.EnsureBootstrapPolicy(asAPIServer, creator(reg, rbacv1.SchemeGroupVersion.WithResource("clusterroles")),
		creator(reg, rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))); err != nil {
		return nil, err
	}
	if err := setLocalModeBinding(asAPIServer, reg, !s.cfg.Classroom); err != nil {
		return nil, err
	}
	s.authz = rbac.New(rbac.Sources{Roles: roles, RoleBindings: bindings, ClusterRoles: clusterRoles, ClusterRoleBindings: clusterBindings}, s.log)
	// The caches stop when shutdown begins, before the stores they read do,
	// so stopping is quiet (hooks run in reverse order of registration).
	cachesCtx, stopCaches := context.WithCancel(s.backgroundCtx)
	s.OnShutdown(func(context.Context) { stopCaches() })
	s.authz.Start(cachesCtx)
	quotas := startQuotas(cachesCtx, api, s.log)
	s.quotas = quotas
	// The controllers start once the system objects exist (startKeepers):
	// what they write is admitted, and admission refuses objects in a
	// namespace that does not exist yet (the node's lease's).
	s.startControllersLater = func() { s.startControllers(cachesCtx, api, quotas) }
	nsCache := admission.NewNamespaceCache(namespaces, namespaces)
	nsCache.Start(cachesCtx)
	s.nsCache = nsCache
	if err := errors.Join(s.authz.WaitForSync(startCtx), nsCache.WaitForSync(startCtx), quotas.WaitForSync(startCtx)); err != nil {
		return nil, err
	}

	static := authn.NewStaticTokens()
	static.AddHash(hex.EncodeToString(s.adminTokenHash[:]), AdminUser)
	if s.cfg.InstructorToken != "" {
		static.AddToken(s.cfg.InstructorToken, InstructorUser)
	}
	if s.cfg.GraderToken != "" {
		static.AddToken(s.cfg.GraderToken, GraderUser)
	}
	s.authn = authn.New(authn.Config{Static: static, Store: authn.NewEtcdTokens(s.etcd.Client())})
	return &pipeline.Pipeline{
		Authn: s.authn,
		Authz: s.authz,
		Admission: &admission.Chain{
			Mutating:   []admission.MutatingPlugin{admission.NewNamespaceLifecycle(nsCache), admission.ServiceAccount{}, admission.DefaultTolerationSeconds{}},
			Validating: []admission.ValidatingPlugin{&admission.RequireLimits{Namespaces: nsCache}, &admission.ResourceQuota{Quotas: quotas, Usage: quotaUsage{api: api}}},
		},
		Traces: s.traces,
	}, nil
}

// frontDoor refuses unsafe requests sent from another site's pages,
// authenticates every request, authorizes the ones that are not Kubernetes
// resources (the API authorizes those with their attributes), and
// publishes each request's trace once it is answered.
func (s *Server) frontDoor(p *pipeline.Pipeline) echo.MiddlewareFunc {
	// One check for every unsafe method, whatever the credential: in local
	// mode a request with none is cluster-admin, so a form on any web page
	// could otherwise act as the local user. kubectl and client-go send
	// neither Origin nor Sec-Fetch-Site, and pass.
	crossOrigin := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := s.fromView(c.Request())
			c.SetRequest(r)
			tr := pipeline.NewTrace(r)
			ctx, method := r.Context(), r.Method
			finish := func(code int) {
				s.observe(ctx, tr, method, code)
				p.Finish(tr, code)
			}
			c.Response().Header().Set(pipeline.TraceHeader, tr.ID)
			if err := crossOrigin.Check(r); err != nil {
				finish(http.StatusForbidden)
				return forbidden("cross-origin request refused: " + err.Error() + "; send it from kubelab's own pages, kubectl or curl")
			}
			authenticated, user, err := s.authenticate(p, tr, r)
			if err != nil {
				finish(responseCode(c, err))
				return err
			}
			c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), tr, authenticated, user)))
			if s.cfg.Classroom && user.IsAnonymous() && isPageRequest(r) {
				// A browser that has not joined the class is sent to join.
				finish(http.StatusSeeOther)
				return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(r.URL.RequestURI()))
			}
			if isKubeNonResourcePath(r.URL.Path) {
				if err := authorizeNonResource(p, tr, r, user); err != nil {
					finish(http.StatusForbidden)
					return err
				}
			}
			err = next(c)
			finish(responseCode(c, err))
			return err
		}
	}
}

// authenticate finds who sent r: kubelab itself or a user it acts for (in
// process), else the request's credentials, and then whom the request
// impersonates. Impersonation is the Kubernetes API's: kubelab's own
// endpoints (reset, labs, quizzes, kubeconfig, traces, pages, websockets)
// act on and mint for the user who authenticated, so they refuse it.
func (s *Server) authenticate(p *pipeline.Pipeline, tr *pipeline.Trace, r *http.Request) (authenticated, user pipeline.User, err error) {
	if authenticated, err = p.Authenticate(tr, r); err != nil {
		return pipeline.User{}, pipeline.User{}, err
	}
	if !isKubePath(r.URL.Path) && asksImpersonation(r) {
		return pipeline.User{}, pipeline.User{}, forbidden("impersonation applies to the Kubernetes API only; kubelab's own endpoints act as who you are")
	}
	user, err = p.Impersonate(tr, r, authenticated)
	return authenticated, user, err
}

func authorizeNonResource(p *pipeline.Pipeline, tr *pipeline.Trace, r *http.Request, user pipeline.User) error {
	verb := strings.ToLower(r.Method)
	if verb == "head" {
		verb = "get"
	}
	attrs := &pipeline.Attributes{User: user, Verb: verb, Path: r.URL.Path}
	tr.Describe(attrs)
	return p.Authorize(tr, attrs)
}

// asksImpersonation: any of the headers of kubectl's --as, --as-group,
// --as-uid and --as-user-extra.
func asksImpersonation(r *http.Request) bool {
	for key := range r.Header {
		if strings.HasPrefix(key, "Impersonate-") {
			return true
		}
	}
	return false
}

// forbidden is a 403 Status with msg as its whole message.
func forbidden(msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg,
	}}
}

// isKubePath: the Kubernetes API (/api, /apis) and kube's non-resource
// paths, as opposed to kubelab's own endpoints and pages.
func isKubePath(path string) bool {
	return path == "/api" || path == "/apis" || strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/apis/") || isKubeNonResourcePath(path)
}

// kubeNonResourcePaths are the paths kube-apiserver serves outside /api
// and /apis; RBAC authorizes them as non-resource URLs, as kube does
// (system:public-info-viewer lets anyone read /version and health).
// /api and /apis are authorized by the API with their resource attributes;
// kubelab's own pages and endpoints decide from the request's user.
var kubeNonResourcePaths = []string{"/version", "/healthz", "/livez", "/readyz", "/openapi", "/debug", "/metrics", "/.well-known"}

func isKubeNonResourcePath(path string) bool {
	for _, prefix := range kubeNonResourcePaths {
		if path == prefix || strings.HasPrefix(path, prefix+"/") {
			return true
		}
	}
	return false
}

// isPageRequest: a browser navigating to one of kubelab's pages (not the
// API, the sign-in page itself, or a static file).
func isPageRequest(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		return false
	}
	p := r.URL.Path
	// The dashboard has a sign-in of its own, for instructors' tokens; the
	// sign-in pages' language switch must work before anyone signs in.
	if p == "/signin" || p == "/labs/dashboard" || p == "/lang" || strings.HasPrefix(p, "/static/") || strings.HasSuffix(p, ".css") || strings.HasSuffix(p, ".js") {
		return false
	}
	return !isKubeNonResourcePath(p) && p != "/api" && p != "/apis" && !strings.HasPrefix(p, "/api/") && !strings.HasPrefix(p, "/apis/")
}

func responseCode(c echo.Context, err error) int {
	if err == nil {
		return c.Response().Status
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return int(st.Status().Code)
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return http.StatusInternalServerError
}

// LocalModeBinding is the ClusterRoleBinding that makes a local kubelab
// behave like a kind cluster for whoever runs it: kubectl sends no
// credentials to a plain-HTTP server, so its requests arrive anonymous, and
// this binding (an ordinary RBAC object a student can read) makes anonymous
// requests cluster-admin. A token's user is authorized by its own bindings.
const LocalModeBinding = "kubelab-local-mode"

// setLocalModeBinding creates the local-mode binding, or, for classroom
// mode, removes it: a data directory first used locally must not leave
// anonymous requests cluster-admin in a class. It writes as ctx's user.
func setLocalModeBinding(ctx context.Context, reg *registry.Registry, local bool) error {
	bindings, ok := reg.Store(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))
	if !ok {
		return errors.New("clusterrolebindings are not served")
	}
	if !local {
		_, _, err := bindings.Delete(ctx, storage.Key{Name: LocalModeBinding}, registry.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LocalModeBinding,
			Annotations: map[string]string{"kubelab.io/why": "local mode: kubectl sends no credentials over plain HTTP, so the local user arrives as system:anonymous and is made cluster-admin here, as on a kind cluster"},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: pipeline.AllUnauthenticated}},
	}
	_, err := bindings.Create(ctx, b, registry.CreateOptions{FieldManager: apiServerFieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// creator is what RBAC's bootstrap needs to write its policy: a create
// of one resource through the registry, as ctx's user.
func creator(reg *registry.Registry, gvr schema.GroupVersionResource) rbac.Creator {
	return creatorFunc(func(ctx context.Context, _ storage.Key, obj runtime.Object) (runtime.Object, error) {
		store, ok := reg.Store(gvr)
		if !ok {
			return nil, fmt.Errorf("%s is not served", gvr)
		}
		return store.Create(ctx, obj, registry.CreateOptions{FieldManager: apiServerFieldManager})
	})
}

type creatorFunc func(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error)

func (f creatorFunc) Create(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error) {
	return f(ctx, k, obj)
}
