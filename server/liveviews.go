package server

import (
	"context"
	"fmt"
	"net"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/server/webui"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// The web UI's live views and the labs read the pods and etcd through
// small interfaces of their own; this is where the registry, the pods
// watch cache and the compactor are handed to them.

// pods is the registry's pods store with its watch cache.
func (s *Server) pods() (*registry.Store, *watchcache.Cache, error) {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	store, ok := s.api.Registry().Store(gvr)
	es, cached := s.api.Store(gvr)
	if !ok || !cached {
		return nil, nil, fmt.Errorf("%s is not served", gvr)
	}
	return store, es.Cache(), nil
}

// labChecker is who the labs read the cluster as, when they check a
// student's step against the stored state.
var labChecker = registry.Controller("lab-checker")

// labPods is the pods as the labs read them: through the registry's
// store, as labChecker, and the pods watch cache's window.
type labPods struct {
	store *registry.Store
	cache *watchcache.Cache
}

var _ labhttp.Pods = labPods{}

func (p labPods) List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error) {
	return p.store.List(registry.WithUser(ctx, labChecker), opts)
}

func (p labPods) WatchWindowStart() int64 { return p.cache.Window().Start }

var (
	_ webui.Compactor   = (*etcd3.Compactor)(nil)
	_ webui.PodStore    = (*registry.Store)(nil)
	_ webui.WatchWindow = (*watchcache.Cache)(nil)
)

// webSelf is how the web UI reaches kubelab's own plain-HTTP listener,
// over loopback, for the views that show an HTTP exchange; its key lets
// the front door believe which view sent a request.
func (s *Server) webSelf() webui.Self {
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	// No proxy: the requests must reach this process, whatever the
	// environment says. No gzip: a watch's events must not wait in a
	// compressor's buffer, and the race counts the bytes a client reads.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true}}
	return webui.Self{URL: "http://" + net.JoinHostPort(host, port), Client: client, ViewKey: s.viewKey}
}
