// Package apitest serves kubelab's Kubernetes API alone, for tests of the
// API itself: the registry over a real embedded etcd, kubeapi's handlers
// and the OpenAPI documents on a loopback port, with the lesson's demo
// namespace seeded. By default it has no request pipeline (every request
// is allowed and admitted as the anonymous user, and none is traced);
// Config.Pipeline puts kubelab's front door before it (tokens, RBAC,
// admission, traces), as a local kubelab serves. It has no controllers,
// no web UI and no extensions unless a test starts them on it: what the
// API answers on its own, without a whole kubelab's start. Two Servers
// can share one etcd, as replicas of kubelab do, or start one after the
// other on one etcd data directory, as a restart does.
// A test of classroom mode, limits, pages or the controllers' work
// starts the whole server (kubelabtest).
package apitest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/server/frontdoor"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/openapi"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// Config chooses what the API serves.
type Config struct {
	// WatchFromEtcd serves every watch from etcd rather than the watch
	// cache (kubelab's --watch-cache=false).
	WatchFromEtcd bool
	// EventFreshDuration shortens how long the watch caches keep an
	// event in their window (kube's 75 s), as kubelab's
	// server Config.WatchCacheEventFreshness does.
	EventFreshDuration time.Duration
	// Resources are served besides the built-in ones: an extension's,
	// which the test then starts on API and Docs.
	Resources []*registry.Resource
	// OpenAPI describes, besides what is served, what an extension will
	// serve once started on the API (aggregator.APIServicesOpenAPI): the
	// documents, from which server-side apply knows each kind, are built
	// first, as in a whole kubelab.
	OpenAPI []openapi.Resource
	// Pipeline serves every request through kubelab's front door
	// (server/frontdoor) in local mode: bearer tokens (FrontDoor's Authn
	// mints them), RBAC with kube's default policy and the local-mode
	// binding, admission, and a trace of each request on FrontDoor's
	// bus. Without it every request is the anonymous user's, allowed.
	Pipeline bool
	// FromView, with Pipeline, is how the front door tells the web UI's
	// views' requests (webui.FromView with the key the test gives the
	// web UI).
	FromView func(*http.Request) *http.Request
	// NoDemo leaves out the lesson's demo namespace.
	NoDemo bool
	// Etcd is another Server's etcd (its Etcd) to serve from, as a second
	// kubelab sharing one etcd does; that Server stops it. By default the
	// Server starts an etcd of its own.
	Etcd *embedetcd.Member
	// EtcdDataDir is where the Server's own etcd keeps its data: the
	// directory of an earlier Server, stopped, to start again on what it
	// left, as a restarted kubelab does. A fresh temporary directory by
	// default.
	EtcdDataDir string
}

// Server is the API, serving until the test ends.
type Server struct {
	api        *kubeapi.API
	door       *frontdoor.FrontDoor
	docs       *openapi.Service
	echo       *echo.Echo
	etcd       *embedetcd.Member
	url        string
	kubeconfig string
}

// Start serves the API until the test ends, once every watch cache has
// read etcd. Options tune its Config.
func Start(t testing.TB, options ...func(*Config)) *Server {
	t.Helper()
	var cfg Config
	for _, o := range options {
		o(&cfg)
	}
	s := &Server{etcd: cfg.Etcd}
	if s.etcd == nil {
		if cfg.EtcdDataDir == "" {
			cfg.EtcdDataDir = t.TempDir()
		}
		s.etcd = storagetest.StartEtcdIn(t, cfg.EtcdDataDir)
	}
	resources := append(registry.BuiltinResources(), cfg.Resources...)
	if cfg.Pipeline {
		resources = append(resources, frontdoor.Reviews(func() *frontdoor.FrontDoor { return s.door })...)
	}
	docs, err := openapi.New(append(openapi.ResourcesOf(resources), cfg.OpenAPI...), openapi.Info{Title: "Kubernetes", Version: kubeapi.Version.GitVersion})
	if err != nil {
		t.Fatal(err)
	}
	s.docs = docs
	s.api, err = kubeapi.New(registry.Config{
		Client: s.etcd.Client(), WatchFromEtcd: cfg.WatchFromEtcd, EventFreshDuration: cfg.EventFreshDuration,
		Resources: resources, TypeConverter: docs.TypeConverter(),
	})
	if err != nil {
		t.Fatal(err)
	}

	s.echo = echo.New()
	srv := httptest.NewUnstartedServer(s.echo)
	t.Cleanup(srv.Close)
	// Cleanups run last first: the API stops before the server closes,
	// so that open watches end rather than hold Close up until their
	// timeoutSeconds, as a whole kubelab ends them when it shuts down.
	// The front door's caches, started next, stop before the API.
	t.Cleanup(s.api.Stop)
	// As kubelab's router does: a handler's panic is a 500, not the end
	// of the test binary, so a fuzz input that finds one is reported.
	s.echo.Use(middleware.Recover())
	s.echo.HTTPErrorHandler = func(err error, c echo.Context) {
		if c.Response().Committed {
			return // a watch stream that broke: too late for a Status
		}
		st, internal := kubeapi.StatusOf(err, c.Request())
		if internal {
			t.Logf("internal error on %s %s: %v", c.Request().Method, c.Request().URL, err)
		}
		if err := kubeapi.WriteStatus(c, st); err != nil {
			t.Logf("writing the Status of %s %s: %v", c.Request().Method, c.Request().URL, err)
		}
	}
	if cfg.Pipeline {
		s.door = startFrontDoor(t, s.api, s.etcd.Client(), cfg.FromView)
		s.echo.Use(s.door.Middleware())
	} else {
		// Every request is the anonymous user's, as the front door names
		// an unauthenticated one: what the API passes on to an aggregated
		// backend, which refuses a request that names no one.
		s.echo.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			anonymous := pipeline.Anonymous()
			return func(c echo.Context) error {
				r := c.Request()
				c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), nil, anonymous, anonymous)))
				return next(c)
			}
		})
	}
	s.api.Install(s.echo)
	docs.Register(s.echo)
	srv.Start()
	registrytest.Initialized(t, s.api.Registry())
	s.url = srv.URL

	if !cfg.NoDemo {
		ctx, cancel := context.WithTimeout(registry.WithUser(context.Background(), kubeapi.Seeder), 30*time.Second)
		defer cancel()
		if err := s.api.SeedDemo(ctx); err != nil {
			t.Fatalf("seed the demo namespace: %v", err)
		}
	}
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {server: " + s.url + "}\n" +
		"users:\n- name: lab\n  user: {}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: lab, namespace: default}\ncurrent-context: lab\n"
	if err := os.WriteFile(s.kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// startFrontDoor assembles the front door over api, in local mode with no
// static token, and makes it the API's pipeline. Its caches stop before
// the API does.
func startFrontDoor(t testing.TB, api *kubeapi.API, etcd *clientv3.Client, fromView func(*http.Request) *http.Request) *frontdoor.FrontDoor {
	t.Helper()
	caches, stopCaches := context.WithCancel(context.Background())
	t.Cleanup(stopCaches)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	door, err := frontdoor.Assemble(ctx, caches, frontdoor.Config{API: api, Etcd: etcd, Tokens: authn.NewStaticTokens(), FromView: fromView})
	if err != nil {
		t.Fatalf("assemble the front door: %v", err)
	}
	api.SetPipeline(door.Pipeline)
	return door
}

// FrontDoor is the request pipeline the API serves through, with its
// authenticator (to mint a user's token) and trace bus; nil without
// Config.Pipeline.
func (s *Server) FrontDoor() *frontdoor.FrontDoor { return s.door }

// API is the Kubernetes API served.
func (s *Server) API() *kubeapi.API { return s.api }

// Docs are the OpenAPI documents served, for an extension to add to.
func (s *Server) Docs() *openapi.Service { return s.docs }

// Echo is the router, to serve a request in-process.
func (s *Server) Echo() *echo.Echo { return s.echo }

// URL is where the API serves plain HTTP on loopback.
func (s *Server) URL() string { return s.url }

// KubeconfigPath is a kubeconfig for the API, for kubectl.
func (s *Server) KubeconfigPath() string { return s.kubeconfig }

// Etcd is the etcd the API serves from, for another Server to share.
func (s *Server) Etcd() *embedetcd.Member { return s.etcd }

// EtcdClient is a client of the API's etcd.
func (s *Server) EtcdClient() *clientv3.Client { return s.etcd.Client() }

// EtcdURL is where etcdctl reaches the API's etcd.
func (s *Server) EtcdURL() string { return s.etcd.ClientURL() }

// Clientset is a client-go clientset for the API, without client-side
// rate limiting.
func (s *Server) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: s.url, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
