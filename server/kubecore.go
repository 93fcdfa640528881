package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/trace"
	"github.com/kubelab/kubelab/server/frontdoor"
	"github.com/kubelab/kubelab/server/webui"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// The cores that can serve the Kubernetes API (--apiserver).
const (
	// APIServerKubelab is kubelab's own core: its registry, watch cache,
	// pipeline and controllers. The default.
	APIServerKubelab = "kubelab"
	// APIServerKube is kube-apiserver's own code, run in-process over
	// kubelab's etcd. New: the lesson's pages and kubelab's own endpoints
	// do not run on it yet.
	APIServerKube = "kube"
)

// KubeCore is kube-apiserver running in kubelab's process. Requests reach
// it through kubelab's router only.
type KubeCore interface {
	http.Handler
	// Stop shuts it down and waits, at most until ctx ends.
	Stop(ctx context.Context) error
}

// KubeCoreConfig is what kubelab gives the kube core.
type KubeCoreConfig struct {
	// EtcdServers are etcd's client URLs.
	EtcdServers []string
	// Dir holds what the kube core keeps across restarts.
	Dir string
	// IsAdminToken reports whether a bearer token is the admin
	// kubeconfig's.
	IsAdminToken func(token string) bool
	// Local is local mode: anonymous requests through kubelab's port are
	// cluster-admin, as with kubelab's own core.
	Local bool
	// kubelab's flags of kube-apiserver's names.
	RequestTimeout                                   time.Duration
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	Profiling                                        bool
	// SimulatedNode runs kubelab's simulated node, scheduler and kubelet
	// against the kube core; a pod runs PodStartDelay after its creation.
	SimulatedNode bool
	PodStartDelay time.Duration
	// Traces receives a trace of each request through kubelab's front
	// door, in the shape of kubelab's own core's.
	Traces func(pipeline.Trace)
	Logger *slog.Logger
}

// StartKubeCore starts the kube core and returns once it is ready.
type StartKubeCore func(ctx context.Context, cfg KubeCoreConfig) (KubeCore, error)

func (c Config) validateAPIServer() error {
	switch c.APIServer {
	case "", APIServerKubelab:
		return nil
	case APIServerKube:
	default:
		return fmt.Errorf("--apiserver must be %s (kubelab's own core) or %s (kube-apiserver's own code), got %q", APIServerKubelab, APIServerKube, c.APIServer)
	}
	if c.StartKubeCore == nil {
		return errors.New("--apiserver=kube: this build of kubelab has no kube core")
	}
	if c.Classroom {
		return errors.New("--apiserver=kube does not run a class yet: sign-in, students' namespaces and limits are built on kubelab's own core. Drop --classroom, or --apiserver=kube")
	}
	if len(c.EtcdEndpoints) == 0 && c.EtcdListenClient == "" {
		return errors.New("--apiserver=kube reaches the embedded etcd over its client port: --etcd-listen-client must not be empty")
	}
	return nil
}

func (c Config) kubeCore() bool { return c.APIServer == APIServerKube }

// coreKey records in etcd which core last served it: the two cores keep
// different things under /registry/ (kube's objects are protobuf, its
// bootstrap objects differ), so neither may serve the other's data.
const coreKey = "/kubelab/apiserver"

// claimCore refuses an etcd last served by the other core, and otherwise
// records that core serves it. An etcd without the record but with
// objects was served by kubelab's own core, which kept no record before.
func claimCore(ctx context.Context, client *clientv3.Client, core string) error {
	if core == "" {
		core = APIServerKubelab
	}
	for {
		resp, err := client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(coreKey), "=", 0)).
			Then(clientv3.OpGet(storage.RootPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())).
			Else(clientv3.OpGet(coreKey)).
			Commit()
		if err != nil {
			return fmt.Errorf("reading which core served this etcd: %w", err)
		}
		if !resp.Succeeded {
			last := string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
			if last != core {
				return refuseCore(last, core)
			}
			return nil
		}
		if resp.Responses[0].GetResponseRange().Count > 0 && core != APIServerKubelab {
			return refuseCore(APIServerKubelab, core)
		}
		put, err := client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(coreKey), "=", 0)).
			Then(clientv3.OpPut(coreKey, core)).
			Commit()
		if err != nil {
			return fmt.Errorf("recording which core serves this etcd: %w", err)
		}
		if put.Succeeded {
			return nil
		}
		// Another kubelab recorded its core in between: read it again.
	}
}

func refuseCore(last, asked string) error {
	return fmt.Errorf("this data dir's etcd was last served by --apiserver=%s, and --apiserver=%s cannot share it: "+
		"the two cores store objects differently. Start with --apiserver=%s, or give --apiserver=%s a new --data-dir", last, asked, last, asked)
}

// installKubeCore starts the kube core and routes to it every request
// but kubelab's pages and endpoints, which answer that they do not run on
// it yet. Requests pass the router's middleware first: the loopback Host
// check, TLS redirection, body deadlines, and here the cross-origin check.
func (s *Server) installKubeCore(ctx context.Context) error {
	servers := s.cfg.EtcdEndpoints
	if m, ok := s.etcd.(*embedetcd.Member); ok {
		servers = []string{m.ClientURL()}
	}
	s.traces = trace.NewBus(trace.Config{})
	core, err := s.cfg.StartKubeCore(ctx, KubeCoreConfig{
		EtcdServers: servers, Dir: filepath.Join(s.cfg.DataDir, "kube-apiserver"),
		IsAdminToken: s.IsAdminToken, Local: !s.cfg.Classroom,
		RequestTimeout: s.cfg.RequestTimeout, MaxRequestsInflight: s.cfg.MaxRequestsInflight, MaxMutatingRequestsInflight: s.cfg.MaxMutatingRequestsInflight,
		Profiling: s.cfg.Profiling, SimulatedNode: s.cfg.SimulatedNode, PodStartDelay: s.cfg.PodStartDelay, Traces: s.traces.Publish, Logger: s.log,
	})
	if err != nil {
		return err
	}
	s.stops.push(core.Stop)
	// kube-apiserver ends its watches when its HTTP server closes their
	// connections; here kubelab's server holds them, so its requests end
	// when shutdown begins, before kube stops and kubelab's server drains.
	serving, endRequests := context.WithCancel(context.Background())
	s.OnShutdown(func(context.Context) { endRequests() })
	crossOrigin := http.NewCrossOriginProtection()
	s.echo.GET("/kubelab/v1/traces", s.kubeCoreTraces)
	if err := s.installKubeCoreUI(); err != nil {
		return err
	}
	fromView := webui.FromView(s.viewKey)
	route := func(c echo.Context) error {
		r := c.Request()
		switch {
		case strings.HasPrefix(r.URL.Path, "/kubelab/"), strings.HasPrefix(r.URL.Path, "/ui/"):
			return notOnKubeCore(r.URL.Path)
		case wantsPage(r):
			lang := i18n.Of(r)
			return web.Render(c, http.StatusServiceUnavailable, web.Page(web.T(lang, "kubecore.title"), lang, web.NotOnKubeCore(lang)))
		}
		// In local mode a request without credentials is cluster-admin,
		// so a form on any web page must not be able to send one.
		if err := crossOrigin.Check(r); err != nil {
			return frontdoor.Forbidden("cross-origin request refused: " + err.Error() + "; send it from kubectl or curl")
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(serving, cancel)()
		// A request a live view sent for the browser carries the view's
		// name beside the key only the web UI has; the trace names it.
		r = fromView(r.WithContext(ctx))
		// kube needs the connection's own writer: echo's wrapper hides
		// http.Flusher from kube's checks, and its watches would stall.
		core.ServeHTTP(c.Response().Writer, r)
		return nil
	}
	s.echo.Any("/", route)
	s.echo.Any("/*", route)
	return nil
}

// installKubeCoreUI serves the lesson's pages and the live views that run
// on the kube core (webui.Deps.KubeCore). The kube core runs in local mode
// only, where whoever reaches kubelab's port is the local user: kubectl's
// requests arrive anonymous, and so do the browser's, whose views send
// theirs through kubelab's port as kubectl would.
func (s *Server) installKubeCoreUI() error {
	s.echo.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), nil, pipeline.Anonymous(), pipeline.Anonymous())))
			return next(c)
		}
	})
	ui, err := webui.Install(s.echo, webui.Deps{
		KubeCore: true, Traces: s.traces, Self: s.webSelf(), Etcd: s.etcd.Client(), Logger: s.log,
	})
	if err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { ui.Close() })
	s.pageNotFound = ui.NotFound
	return nil
}

// kubeCoreTraces lists a user's latest traces on the kube core, which runs
// in local mode only: whoever reaches kubelab's port is the local user,
// cluster-admin, and may read anyone's. By default, the local user's own
// (kubectl's requests, anonymous over plain HTTP).
func (s *Server) kubeCoreTraces(c echo.Context) error {
	who := c.QueryParam("user")
	if who == "" {
		who = user.Anonymous
	}
	return s.writeTraces(c, who)
}

// notOnKubeCore is the Status of kubelab's own endpoints on the kube core.
func notOnKubeCore(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
		Message: fmt.Sprintf("%s is not yet on the kube core: kubelab's own endpoints need kubelab's core (start kubelab without --apiserver=kube)", path),
	}}
}
