package server

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxFormBytes is the largest form kubelab's own pages send: a sign-in, a
// lab step's answer, a quiz's answers, each well under a few KiB.
const MaxFormBytes = 64 << 10

// guardForms reads the forms of kubelab's own endpoints before any handler
// can: url-encoded only, at most MaxFormBytes. A multipart body is refused
// unread, for no kubelab endpoint takes a file. Without it, Echo's
// FormValue parsed any multipart body it was sent, up to the whole of the
// request, spilling its files to the temporary directory; and since a
// middleware had copied the request by then, net/http never removed them:
// a stranger with no join code left 400 MB behind with each attempt.
//
// The Kubernetes API is left alone: it reads its own bodies (at most
// kubeapi.MaxBodyBytes), and answers an unknown media type as
// kube-apiserver does.
func guardForms(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Whatever a handler parsed anyway is removed once it is done.
		defer func() {
			if f := c.Request().MultipartForm; f != nil {
				f.RemoveAll()
			}
		}()
		r := c.Request()
		if apiRoutes[c.Path()] || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		switch mediaType(r) {
		case "multipart/form-data", "multipart/mixed":
			return &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: "kubelab's forms are sent url-encoded (application/x-www-form-urlencoded); a multipart body is not read",
			}}
		case "application/x-www-form-urlencoded":
			r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxFormBytes)
			if err := r.ParseForm(); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return err // the request timeout's 504
				}
				if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
					return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a form is at most %d bytes", MaxFormBytes))
				}
				return apierrors.NewBadRequest(fmt.Sprintf("the form could not be read: %v", err))
			}
		}
		return next(c)
	}
}

// mediaType is the request's Content-Type without its parameters, or ""
// when it has none or it does not parse.
func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}
