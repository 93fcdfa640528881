package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/pipeline"
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
	s.viewKey = rand.Text()
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

// fromView marks a request the web UI sent for one of its views with
// that view (pipeline.WithSource), if it carries the key only the web UI
// holds. The headers go either way: a client cannot pass for a view.
func (s *Server) fromView(r *http.Request) *http.Request {
	view, key := r.Header.Get(webui.ViewHeader), r.Header.Get(webui.ViewKeyHeader)
	if view == "" && key == "" {
		return r
	}
	r.Header.Del(webui.ViewHeader)
	r.Header.Del(webui.ViewKeyHeader)
	if s.viewKey == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.viewKey)) != 1 {
		return r
	}
	return r.WithContext(pipeline.WithSource(r.Context(), view))
}
