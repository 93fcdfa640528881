package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StatusOf is the Status kube-apiserver answers for err: errors that
// carry one (apierrors and the storage layer's errors) keep it, Echo's
// routing and middleware errors get the reason kube-apiserver gives for
// their code, and anything else is an internal error whose details stay
// in the server's log (internal says so), never in the answer.
func StatusOf(err error, r *http.Request) (st metav1.Status, internal bool) {
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil {
		// The request's own deadline (--request-timeout), not etcd's.
		return apierrors.NewTimeoutError("the server was unable to return a response in the time allotted, but may still be processing the request", 0).Status(), false
	}
	var withStatus apierrors.APIStatus
	if errors.As(err, &withStatus) {
		return withStatus.Status(), false
	}
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code < http.StatusInternalServerError {
		return httpErrorStatus(he, r.Method), false
	}
	if errors.As(err, &he) && he.Code == http.StatusServiceUnavailable {
		return apierrors.NewServiceUnavailable(fmt.Sprint(he.Message)).Status(), false
	}
	return apierrors.NewInternalError(errors.New("an error on the server prevented the request from succeeding; the server log has the details")).Status(), true
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

// WriteStatus answers with st as a failed Status, as kube-apiserver
// writes its errors, with Retry-After when st asks the client to wait.
func WriteStatus(c echo.Context, st metav1.Status) error {
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	st.Kind = "Status"
	st.APIVersion = "v1"
	st.Status = metav1.StatusFailure
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	if c.Request().Method == http.MethodHead {
		return c.NoContent(int(st.Code))
	}
	return c.JSON(int(st.Code), st)
}
