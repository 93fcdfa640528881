package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
// so kubectl and client-go report it as they would a real cluster's.
func (s *Server) handleError(err error, c echo.Context) {
	r := c.Request()
	if c.Response().Committed {
		// Too late for a Status; a watch stream that broke ends up here.
		s.log.DebugContext(r.Context(), "error after response started", "method", r.Method, "path", r.URL.Path, "error", err)
		return
	}
	st := s.statusFor(err, c)
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
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
	st.Kind = "Status"
	st.APIVersion = "v1"
	st.Status = metav1.StatusFailure
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	if r.Method == http.MethodHead {
		err = c.NoContent(int(st.Code))
	} else {
		err = c.JSON(int(st.Code), st)
	}
	if err != nil {
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

// statusFor maps err to a Status: errors that carry one (apierrors and the
// storage layer's errors) keep it, Echo's routing and middleware errors get
// the reason kube-apiserver gives for their code, and anything else is
// logged and answered as an internal error without its details.
func (s *Server) statusFor(err error, c echo.Context) metav1.Status {
	if errors.Is(err, context.DeadlineExceeded) && c.Request().Context().Err() != nil {
		// The request's own deadline (--request-timeout), not etcd's.
		return apierrors.NewTimeoutError("the server was unable to return a response in the time allotted, but may still be processing the request", 0).Status()
	}
	var withStatus apierrors.APIStatus
	if errors.As(err, &withStatus) {
		return withStatus.Status()
	}
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code < http.StatusInternalServerError {
		return httpErrorStatus(he, c.Request().Method)
	}
	if errors.As(err, &he) && he.Code == http.StatusServiceUnavailable {
		return apierrors.NewServiceUnavailable(fmt.Sprint(he.Message)).Status()
	}
	r := c.Request()
	s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	return apierrors.NewInternalError(errors.New("an error on the server prevented the request from succeeding; the server log has the details")).Status()
}

// httpErrorStatus keeps a message the handler wrote and otherwise uses
// kube-apiserver's wording for the code.
func httpErrorStatus(he *echo.HTTPError, method string) metav1.Status {
	msg := fmt.Sprint(he.Message)
	custom := msg != http.StatusText(he.Code)
	switch he.Code {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(msg).Status()
	case http.StatusUnauthorized:
		return apierrors.NewUnauthorized(msg).Status()
	case http.StatusRequestEntityTooLarge:
		if !custom {
			msg = "the request body is too large"
		}
		return apierrors.NewRequestEntityTooLargeError(msg).Status()
	case http.StatusTooManyRequests:
		return apierrors.NewTooManyRequests(msg, 0).Status()
	}
	st := apierrors.NewGenericServerResponse(he.Code, method, schema.GroupResource{}, "", msg, 0, false).Status()
	if custom {
		st.Message = msg
	}
	return st
}
