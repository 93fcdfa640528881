package server

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/pipeline"
)

// installMetrics serves /metrics (authorized like kube-apiserver's, as a
// non-resource URL) and registers the figures only kubelab has.
func (s *Server) installMetrics() {
	m := s.metrics
	m.Gauge("kubelab_watch_cache_watchers", "Watches open on the watch caches (HTTP watches, informers, websockets).", func() float64 {
		n := 0
		for _, st := range s.api.Stores() {
			n += st.Cache().Stats().Watchers
		}
		return float64(n)
	})
	m.Counter("kubelab_watch_cache_stalled_watchers_total", "Watchers closed because they could not keep up (they resume from their last resourceVersion).", func() float64 {
		var n uint64
		for _, st := range s.api.Stores() {
			n += st.Cache().Stats().Stalled
		}
		return float64(n)
	})
	m.Counter("kubelab_etcd_compactions_total", "Compactions of etcd's history made by this server.", func() float64 {
		return float64(s.etcdCompactor.Compactions())
	})
	m.Counter("kubelab_traces_dropped_total", "Traces a slow trace subscriber missed (the bus never blocks a request).", func() float64 {
		return float64(s.traces.Dropped())
	})
	m.Gauge("kubelab_trace_subscribers", "Subscribers of the trace bus (pipeline views open in browsers).", func() float64 {
		return float64(s.traces.Subscribers())
	})
	s.echo.GET("/metrics", echo.WrapHandler(m.Handler()))
}

// observe counts a finished request and logs one line for it, with its
// trace ID (the Audit-Id header the client got) to find it by. Probes
// are logged at debug, so a health-checked server's log stays readable.
func (s *Server) observe(ctx context.Context, tr *pipeline.Trace, method string, code int) {
	elapsed := time.Since(tr.Time)
	s.metrics.ObserveRequest(tr, code, elapsed)
	level := slog.LevelInfo
	if isProbe(tr.Path) {
		level = slog.LevelDebug
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	s.log.LogAttrs(ctx, level, "request",
		slog.String("trace", tr.ID), slog.String("user", tr.User), slog.String("method", method),
		slog.String("path", tr.Path), slog.String("verb", tr.Verb), slog.Int("code", code),
		slog.Duration("duration", elapsed.Round(time.Microsecond)))
}

func isProbe(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/metrics"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
