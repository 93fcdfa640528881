package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/server/aggregator"
)

// healthCheck is one named check of /healthz, /livez or /readyz.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// installHealth serves /healthz, /livez and /readyz the way kube-apiserver
// does, so `kubectl get --raw '/readyz?verbose'` reads the same: ping, log
// and etcd, then the post-start hooks by kube's names (each kubelab
// component that does that hook's work, done once it has), and, for
// readiness, the API server's own informers and whether it is shutting
// down.
func (s *Server) installHealth() {
	ping := healthCheck{"ping", func(context.Context) error { return nil }}
	logs := healthCheck{"log", s.logs.Check}
	etcd := healthCheck{"etcd", s.checkEtcd}
	informers := healthCheck{"informer-sync", s.checkInformers}
	shutdown := healthCheck{"shutdown", s.checkShutdown}
	hooks := s.postStartHooks()
	completion := healthCheck{"autoregister-completion", s.checkAutoregistered}
	live := append(append([]healthCheck{ping, logs, etcd}, hooks...), completion)
	s.installHealthEndpoint("healthz", live...)
	s.installHealthEndpoint("livez", live...)
	s.installHealthEndpoint("readyz", append(append([]healthCheck{ping, logs, etcd, informers}, hooks...), completion, shutdown)...)
}

// postStartHooks are kube-apiserver's post-start hooks, each answered by
// what does that work in kubelab. A hook's check fails ("not finished")
// until its work has been done once.
func (s *Server) postStartHooks() []healthCheck {
	hook := func(name string, done func() bool) healthCheck {
		return healthCheck{"poststarthook/" + name, func(context.Context) error {
			if !done() {
				return errors.New("not finished")
			}
			return nil
		}}
	}
	keeper := func(name string) healthCheck {
		return hook(name, func() bool {
			for _, k := range s.keepers {
				if k.name == name {
					return k.done.Load()
				}
			}
			return false
		})
	}
	crds := func() bool { return s.extensions != nil && s.extensions.crds.Started() }
	// agg asks the aggregator, once it exists.
	agg := func(done func(*aggregator.Aggregator) bool) func() bool {
		return func() bool { return s.extensions != nil && s.extensions.agg != nil && done(s.extensions.agg) }
	}
	return []healthCheck{
		hook("start-apiserver-admission-initializer", s.pipelineReady.Load),
		// The API server's informers: the authorizer's and admission's caches.
		hook("generic-apiserver-start-informers", func() bool { return s.nsCache != nil }),
		hook("start-apiextensions-informers", crds),
		hook("start-apiextensions-controllers", crds),
		hook("crd-informer-synced", func() bool { return s.extensions != nil && s.extensions.crds.Synced() }),
		keeper("bootstrap-controller"),
		keeper("start-system-namespaces-controller"),
		hook("start-service-ip-repair-controllers", func() bool { return s.ipRepair != nil && s.ipRepair.Done() }),
		keeper("scheduling/bootstrap-system-priority-classes"),
		keeper("start-cluster-authentication-info-controller"),
		hook("start-kube-aggregator-informers", agg((*aggregator.Aggregator).Synced)),
		hook("apiservice-registration-controller", agg((*aggregator.Aggregator).Synced)),
		hook("apiservice-status-local-available-controller", agg((*aggregator.Aggregator).Checked)),
		hook("apiservice-status-remote-available-controller", agg((*aggregator.Aggregator).Checked)),
		hook("kube-apiserver-autoregistration", agg((*aggregator.Aggregator).Autoregistered)),
		hook("apiservice-openapi-controller", agg((*aggregator.Aggregator).OpenAPISynced)),
		hook("storage-readiness", s.storageReady),
	}
}

// storageReady reports whether every watch cache has read its resource
// from etcd once; once true it stays true, as kube's hook is done once.
func (s *Server) storageReady() bool {
	if s.storageInitialized.Load() {
		return true
	}
	if s.api == nil {
		return false
	}
	for _, st := range s.api.Stores() {
		if !st.Cache().Initialized() {
			return false
		}
	}
	s.storageInitialized.Store(true)
	return true
}

// checkInformers fails until the authorizer's and admission's caches have
// read etcd (they have before kubelab serves; kube reports it all the same).
func (s *Server) checkInformers(context.Context) error {
	var unsynced []string
	if s.authz == nil || !closed(s.authz.Synced()) {
		unsynced = append(unsynced, "rbac")
	}
	if s.nsCache == nil || !closed(s.nsCache.Synced()) {
		unsynced = append(unsynced, "namespaces")
	}
	if len(unsynced) > 0 {
		return fmt.Errorf("informers not started yet: %s", strings.Join(unsynced, ", "))
	}
	return nil
}

// checkAutoregistered fails while a built-in group version's APIService
// has not yet been seen Available.
func (s *Server) checkAutoregistered(context.Context) error {
	if s.extensions == nil || s.extensions.agg == nil {
		return errors.New("the aggregator has not started")
	}
	if pending := s.extensions.agg.AutoregisterPending(); len(pending) > 0 {
		return fmt.Errorf("missing APIService: %v", pending)
	}
	return nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (s *Server) checkEtcd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, etcdHealthTimeout)
	defer cancel()
	return s.etcd.Ready(ctx)
}

func (s *Server) checkShutdown(context.Context) error {
	if s.shuttingDown.Load() {
		return errors.New("process is shutting down")
	}
	return nil
}

var healthMethods = []string{http.MethodGet, http.MethodHead}

func (s *Server) installHealthEndpoint(name string, checks ...healthCheck) {
	s.echo.Match(healthMethods, "/"+name, s.healthHandler(name, checks))
	for _, c := range checks {
		s.echo.Match(healthMethods, "/"+name+"/"+c.name, s.singleCheckHandler(name, c))
	}
}

// healthHandler runs every check in order. Like kube-apiserver it answers a
// bare "ok" on success, lists the checks when ?verbose is given or a check
// failed, withholds failure reasons from the response (they are logged), and
// skips checks named in ?exclude.
func (s *Server) healthHandler(name string, checks []healthCheck) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		excluded := map[string]bool{}
		for _, e := range r.URL.Query()["exclude"] {
			excluded[e] = true
		}
		var out, reasons bytes.Buffer
		failed := false
		for _, hc := range checks {
			if excluded[hc.name] {
				delete(excluded, hc.name)
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", hc.name)
				continue
			}
			if err := hc.check(r.Context()); err != nil {
				failed = true
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", hc.name)
				fmt.Fprintf(&reasons, "[-]%s failed: %v\n", hc.name, err)
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", hc.name)
		}
		if len(excluded) > 0 {
			var unknown []string
			for e := range excluded {
				unknown = append(unknown, e)
			}
			sort.Strings(unknown)
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unknown, ","))
		}
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if failed {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, name+" check failed", slog.String("checks", reasons.String()))
			return c.String(http.StatusInternalServerError, out.String()+name+" check failed\n")
		}
		if _, verbose := r.URL.Query()["verbose"]; !verbose {
			return c.String(http.StatusOK, "ok")
		}
		return c.String(http.StatusOK, out.String()+name+" check passed\n")
	}
}

// singleCheckHandler serves /<endpoint>/<check>; like kube-apiserver it does
// show the reason of a failure.
func (s *Server) singleCheckHandler(name string, hc healthCheck) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		if err := hc.check(c.Request().Context()); err != nil {
			s.log.Warn(name+" check failed", "check", hc.name, "error", err)
			return c.String(http.StatusInternalServerError, fmt.Sprintf("internal server error: %v\n", err))
		}
		return c.String(http.StatusOK, "ok")
	}
}
