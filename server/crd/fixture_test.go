package crd_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/server/crd"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// served is a kubelab the tests drive with kubectl and client-go: the API
// serving CRDs (startAPI), behind the front door for a test of the
// traces, with a controller run beside it for a test of its work.
type served interface {
	KubeconfigPath() string
}

// startAPI serves the API alone with CRDs: the customresourcedefinitions
// resource from the start, and the controller that serves what they
// define once the API exists, stopped before the API is, as the server
// starts and stops its extensions.
func startAPI(t *testing.T, options ...func(*apitest.Config)) *apitest.Server {
	t.Helper()
	x := crd.New()
	api := apitest.Start(t, append(options, func(c *apitest.Config) { c.Resources = append(c.Resources, x.Resources()...) })...)
	if err := x.Start(crd.Config{API: api.API(), Docs: api.Docs(), Logger: testLogger(t)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Stop)
	return api
}

// compactNow compacts the API's etcd at its current revision with
// kubelab's compactor, which tells the watch caches.
func compactNow(ctx context.Context, t *testing.T, api *apitest.Server) {
	t.Helper()
	if _, err := etcd3.NewCompactor(api.EtcdClient(), testLogger(t)).CompactNow(ctx); err != nil {
		t.Fatal(err)
	}
}

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }
