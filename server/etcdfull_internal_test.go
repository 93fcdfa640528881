package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/internal/webclient"
	"github.com/kubelab/kubelab/storage/etcdspace"
)

// A write that etcd refused for want of space gets a Status that says so
// and when to try again, in place of etcd's words; every other answer,
// and a read, is left as the API core gave it.
func TestExplainEtcdFull(t *testing.T) {
	e := echo.New()
	e.HTTPErrorHandler = (&Server{log: slog.New(slog.DiscardHandler)}).handleError
	e.Use(explainEtcdFull(etcdspace.New(nil, slog.New(slog.DiscardHandler))))
	refusal := apierrors.NewServiceUnavailable("storage is unavailable: etcdserver: mvcc: database space exceeded")
	for _, route := range []string{"/api/*", "/apis/*", "/kubelab/*"} {
		e.Any(route, func(c echo.Context) error {
			if c.QueryParam("other") != "" {
				return apierrors.NewServiceUnavailable("storage is unavailable: etcdserver: request timed out")
			}
			return refusal
		})
	}
	srv := httptest.NewServer(e)
	defer srv.Close()

	for _, tc := range []struct {
		method, path, want, retryAfter string
	}{
		{"POST", "/api/v1/namespaces/alice/configmaps", "etcd is out of space (its NOSPACE alarm is raised)", "3"},
		{"PATCH", "/apis/apps/v1/namespaces/alice/deployments/web", "kubelab is compacting etcd's history", "3"},
		{"DELETE", "/api/v1/namespaces/alice/pods/web", "nothing was written", "3"},
		{"POST", "/api/v1/namespaces/alice/configmaps?other=1", "etcdserver: request timed out", ""},
		{"GET", "/api/v1/namespaces/alice/configmaps", "database space exceeded", ""},
		{"POST", "/kubelab/v1/kubeconfig", "database space exceeded", ""},
	} {
		resp, body := webclient.Send(t, srv.Client(), tc.method, srv.URL+tc.path, "{}", "Content-Type", "application/json")
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, tc.want) || !strings.Contains(body, `"kind":"Status"`) {
			t.Errorf("%s %s: %d %s, want 503 saying %q", tc.method, tc.path, resp.StatusCode, body, tc.want)
		}
		if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%s %s: Retry-After %q, want %q", tc.method, tc.path, got, tc.retryAfter)
		}
	}
}
