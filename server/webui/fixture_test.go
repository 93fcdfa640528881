package webui_test

import (
	"crypto/rand"
	"log/slog"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/server/webui"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// served is a kubelab the tests drive over HTTP: the API with the web UI
// on it (startAPI), or a whole kubelab (kubelabtest) for what needs
// classroom mode, the server's own middleware or the pages other
// packages serve.
type served interface {
	URL() string
}

// startAPI serves the API behind kubelab's front door, in local mode, with
// the web UI on the same router, given what the whole server gives it: the
// registry's pods store, the pods watch cache, the front door's trace
// bus, etcd's compactor, and the way to the API's own listener, with the
// key by which the front door knows the views' requests. Options tune
// the API's Config.
func startAPI(t *testing.T, options ...func(*apitest.Config)) *apitest.Server {
	t.Helper()
	viewKey := rand.Text()
	api := apitest.Start(t, append([]func(*apitest.Config){func(c *apitest.Config) {
		c.Pipeline, c.FromView = true, webui.FromView(viewKey)
	}}, options...)...)
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	pods, ok := api.API().Registry().Store(gvr)
	cached, inCache := api.API().Store(gvr)
	if !ok || !inCache {
		t.Fatalf("%s is not served from a watch cache", gvr)
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	// As the whole server's: no proxy, so the requests reach this
	// process; no gzip, so a watch's events do not wait in a compressor
	// and the poll-versus-watch race counts the bytes a client reads.
	self := webui.Self{URL: api.URL(), ViewKey: viewKey,
		Client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true}}}
	ui, err := webui.Install(api.Echo(), webui.Deps{API: api.API(), Pods: pods, PodsCache: cached.Cache(),
		Traces: api.FrontDoor().Traces, Compactor: etcd3.NewCompactor(api.EtcdClient(), logger),
		Self: self, Etcd: api.EtcdClient(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// Before the API stops and its listener closes: the live views end
	// first, as when the whole server shuts down.
	t.Cleanup(ui.Close)
	return api
}
