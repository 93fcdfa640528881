package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/storage/etcdspace"
)

// etcdNoSpace is what etcd says when it refuses a write under its NOSPACE
// alarm; the API core passes it on in the error it returns.
const etcdNoSpace = "database space exceeded"

// spaceRetryAfter is the Retry-After of a write refused while kubelab
// reclaims etcd's history: a recovery took 2.6 to 4.3 s in a class.
// client-go waits that long and sends the write again, up to ten times,
// so a student's kubectl rides out the recovery.
const spaceRetryAfter = 3

// explainEtcdFull turns etcd's refusal of an API write for want of space,
// "storage is unavailable: etcdserver: mvcc: database space exceeded",
// into a Status that says what happened to the class and what comes next,
// and has the guard look at once rather than at its next tick. While
// history fills etcd the guard frees it within seconds, and the answer
// says to try again, with a Retry-After that client-go honours; while
// live data fills it, only deletes give room back, and the answer says
// so. Every other answer passes untouched.
func explainEtcdFull(guard *etcdspace.Guard) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			switch c.Request().Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			default:
				return next(c)
			}
			err := next(c)
			if err == nil || c.Response().Committed || !apiRoutes[c.Path()] || !strings.Contains(err.Error(), etcdNoSpace) {
				return err
			}
			guard.Refused()
			return &apierrors.StatusError{ErrStatus: etcdFullStatus(guard.State())}
		}
	}
}

// etcdFullStatus is the answer to a write etcd refused for want of space,
// given what the guard last found.
func etcdFullStatus(state etcdspace.State) metav1.Status {
	if state.LiveDataFills {
		return apierrors.NewServiceUnavailable("etcd is out of space: what the class stores fills its space quota, " +
			"so etcd takes no write from anyone until some is deleted (deletes are still taken); nothing was written. " +
			"The instructor's room says how full it is.").ErrStatus
	}
	st := apierrors.NewServiceUnavailable("etcd is out of space (its NOSPACE alarm is raised), so it takes no write from anyone in the class; nothing was written. " +
		"kubelab is compacting etcd's history and defragmenting it, which takes seconds: try again.").ErrStatus
	st.Details = &metav1.StatusDetails{RetryAfterSeconds: spaceRetryAfter}
	return st
}
