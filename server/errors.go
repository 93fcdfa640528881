package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/server/kubeapi"
)

// noSniff tells browsers to take every response as the type it says it
// is (kube-apiserver says so on the errors it writes; kubelab on every
// response): a JSON Status or object echoes what a client sent (names,
// labels, messages), and a browser that sniffed it as HTML or script
// would run it on this site's origin. Set before any handler runs, it
// covers the error handler's Statuses too.
func noSniff(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		return next(c)
	}
}

// handleError is Echo's HTTPErrorHandler: the one place an error becomes an
// HTTP response. Clients get a Kubernetes Status, as kube-apiserver sends,
// so kubectl and client-go report it as they would a real cluster's; a
// browser asking for a page that is not there gets one that says so.
func (s *Server) handleError(err error, c echo.Context) {
	r := c.Request()
	if c.Response().Committed {
		// Too late for a Status; a watch stream that broke ends up here.
		s.log.DebugContext(r.Context(), "error after response started", "method", r.Method, "path", r.URL.Path, "error", err)
		return
	}
	st, internal := kubeapi.StatusOf(err, r)
	if internal {
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if st.Code == http.StatusNotFound && s.pageNotFound != nil && wantsPage(r) {
		// The request's context may be done by now (the timeout middleware
		// cancels it as the handler returns); the page renders regardless.
		c.SetRequest(r.WithContext(context.WithoutCancel(r.Context())))
		err := s.pageNotFound(c)
		if err == nil {
			return
		}
		s.log.WarnContext(r.Context(), "writing the not-found page", "path", r.URL.Path, "error", err)
	}
	if err := kubeapi.WriteStatus(c, st); err != nil {
		s.log.WarnContext(r.Context(), "writing error response", "method", r.Method, "path", r.URL.Path, "error", err)
	}
}

// wantsPage says whether a request is a browser navigating to a page: a
// GET that accepts HTML, outside the API's and kubelab's machine paths,
// where every client (kubectl, client-go, curl) gets a Status.
func wantsPage(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		return false
	}
	for _, p := range []string{"/api", "/openapi", "/version", "/healthz", "/readyz", "/livez", "/metrics", "/kubelab/", "/debug/", "/ui/"} {
		if strings.HasPrefix(r.URL.Path, p) {
			return false
		}
	}
	return true
}
