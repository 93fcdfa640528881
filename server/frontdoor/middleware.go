package frontdoor

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// Middleware refuses unsafe requests sent from another site's pages,
// authenticates every request, authorizes the ones that are not
// Kubernetes resources (the API authorizes those with their attributes),
// and publishes each request's trace once it is answered.
func (fd *FrontDoor) Middleware() echo.MiddlewareFunc {
	p := fd.Pipeline
	// One check for every unsafe method, whatever the credential: in local
	// mode a request with none is cluster-admin, so a form on any web page
	// could otherwise act as the local user. kubectl and client-go send
	// neither Origin nor Sec-Fetch-Site, and pass.
	crossOrigin := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if fd.cfg.FromView != nil {
				r = fd.cfg.FromView(r)
				c.SetRequest(r)
			}
			tr := pipeline.NewTrace(r)
			ctx, method := r.Context(), r.Method
			finish := func(code int) {
				if fd.cfg.Observe != nil {
					fd.cfg.Observe(ctx, tr, method, code)
				}
				p.Finish(tr, code)
			}
			c.Response().Header().Set(pipeline.TraceHeader, tr.ID)
			if err := crossOrigin.Check(r); err != nil {
				finish(http.StatusForbidden)
				return Forbidden("cross-origin request refused: " + err.Error() + "; send it from kubelab's own pages, kubectl or curl")
			}
			authenticated, user, err := fd.authenticate(tr, r)
			if err != nil {
				finish(responseCode(c, err))
				return err
			}
			c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), tr, authenticated, user)))
			if fd.cfg.Classroom && user.IsAnonymous() && IsPageRequest(r) {
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
func (fd *FrontDoor) authenticate(tr *pipeline.Trace, r *http.Request) (authenticated, user pipeline.User, err error) {
	p := fd.Pipeline
	if authenticated, err = p.Authenticate(tr, r); err != nil {
		return pipeline.User{}, pipeline.User{}, err
	}
	if !IsKubePath(r.URL.Path) && asksImpersonation(r) {
		return pipeline.User{}, pipeline.User{}, Forbidden("impersonation applies to the Kubernetes API only; kubelab's own endpoints act as who you are")
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

// Forbidden is a 403 Status with msg as its whole message.
func Forbidden(msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg,
	}}
}

// IsKubePath: the Kubernetes API (/api, /apis) and kube's non-resource
// paths, as opposed to kubelab's own endpoints and pages.
func IsKubePath(path string) bool {
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

// IsPageRequest: a browser navigating to one of kubelab's pages (not the
// API, the sign-in page itself, or a static file).
func IsPageRequest(r *http.Request) bool {
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
