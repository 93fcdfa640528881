package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/kubelab/kubelab/server/aggregator"
)

// installHealth serves /healthz, /livez and /readyz with kube-apiserver's
// own handlers (k8s.io/apiserver's healthz), so `kubectl get --raw
// '/readyz?verbose'`, ?exclude and /readyz/<check> read the same: ping,
// log and etcd, then the post-start hooks by kube's names (each kubelab
// component that does that hook's work, done once it has), and, for
// readiness, the API server's own informers and whether it is shutting
// down.
func (s *Server) installHealth() {
	ping := healthz.PingHealthz
	// kube's log check asks whether klog can flush; kubelab logs through
	// slog, and its own check asks whether that handler could write.
	logs := s.healthCheck("log", s.logs.Check)
	etcd := s.healthCheck("etcd", s.checkEtcd)
	// kube's healthz.NewInformerSyncHealthz asks a client-go informer
	// factory; the API server's caches here (RBAC's, admission's
	// namespaces) are kubelab's own, so the check asks them.
	informers := s.healthCheck("informer-sync", s.checkInformers)
	shutdown := healthz.NewShutdownHealthz(s.shutdownStarted)
	hooks := s.postStartHooks()
	completion := s.healthCheck("autoregister-completion", s.checkAutoregistered)
	live := append(append([]healthz.HealthChecker{ping, logs, etcd}, hooks...), completion)
	mux := echoMux{s.echo}
	healthz.InstallHandler(mux, live...)
	healthz.InstallLivezHandler(mux, live...)
	healthz.InstallReadyzHandler(mux, append(append([]healthz.HealthChecker{ping, logs, etcd, informers}, hooks...), completion, shutdown)...)
}

// echoMux lets healthz install its handlers on the router. Like kube's
// mux they answer every method; RBAC decides who may POST (kube's
// system:public-info-viewer may only get).
type echoMux struct{ e *echo.Echo }

func (m echoMux) Handle(pattern string, h http.Handler) { m.e.Any(pattern, echo.WrapHandler(h)) }

// healthCheck is a named check that logs why it failed: healthz withholds
// the reason from the answer and logs it through klog, which kubelab does
// not configure.
func (s *Server) healthCheck(name string, check func(context.Context) error) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(r *http.Request) error {
		err := check(r.Context())
		if err != nil {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "health check failed", slog.String("path", r.URL.Path), slog.String("check", name), slog.Any("error", err))
		}
		return err
	})
}

// postStartHooks are kube-apiserver's post-start hooks, each answered by
// what does that work in kubelab. A hook's check fails ("not finished")
// until its work has been done once.
func (s *Server) postStartHooks() []healthz.HealthChecker {
	hook := func(name string, done func() bool) healthz.HealthChecker {
		return s.healthCheck("poststarthook/"+name, func(context.Context) error {
			if !done() {
				return errors.New("not finished")
			}
			return nil
		})
	}
	keeper := func(name string) healthz.HealthChecker {
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
	return []healthz.HealthChecker{
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
