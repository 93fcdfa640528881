// Package server wires kubelab together: etcd, the admin kubeconfig and the
// Echo HTTP server, started in that order and stopped in reverse.
package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/controller/serviceip"
	"github.com/kubelab/kubelab/internal/logcheck"
	labstore "github.com/kubelab/kubelab/labs/etcdstore"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/pipeline/trace"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/quiz/etcdstore"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/adaptive"
	"github.com/kubelab/kubelab/server/aggregator"
	"github.com/kubelab/kubelab/server/frontdoor"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/server/metrics"
	"github.com/kubelab/kubelab/server/openapi"
	"github.com/kubelab/kubelab/server/quizhttp"
	"github.com/kubelab/kubelab/server/terminal"
	"github.com/kubelab/kubelab/server/webui"
	"github.com/kubelab/kubelab/server/wshub"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/etcdspace"
	"github.com/kubelab/kubelab/storage/replicas"
	"github.com/kubelab/kubelab/web"
)

// Server is a running kubelab: its etcd, its listener and its Echo router.
// Build it with New, add routes to Echo, then Start it; Shutdown stops it.
type Server struct {
	// pageNotFound answers a browser's page request at an unknown address
	// with the web UI's friendly page instead of a Status.
	pageNotFound echo.HandlerFunc

	cfg  Config
	log  *slog.Logger
	out  io.Writer
	etcd Etcd
	echo *echo.Echo
	ln   net.Listener
	url  string
	// viewKey proves a request to ln came from the web UI's views.
	viewKey string

	kubeconfig     string
	adminTokenHash [sha256.Size]byte

	shuttingDown atomic.Bool
	// shutdownStarted is closed when Shutdown begins: /readyz fails.
	shutdownStarted chan struct{}
	// stops undoes what New and Start started, newest first: on Shutdown,
	// and when New fails part-way.
	stops stopStack

	compactor Compactor
	// etcdCompactor is the real compactor: stores register their watch
	// caches with it, and labs call its CompactNow.
	etcdCompactor *etcd3.Compactor
	// etcdSpace recovers etcd from its NOSPACE alarm, whichever core runs.
	etcdSpace *etcdspace.Guard
	// replicas are the kubelab processes sharing this etcd: a class's
	// limits that each keeps in memory are shared out among them.
	replicas   *replicas.Set
	api        *kubeapi.API
	extensions *extensions
	keepers    []*keeper
	// pipelineReady is set once the request pipeline (authentication,
	// RBAC, admission) is installed; storageInitialized once every watch
	// cache has read etcd.
	pipelineReady, storageInitialized atomic.Bool
	ipRepair                          *serviceip.Repair
	// startControllersLater starts the controllers over the caches
	// buildPipeline made, once the system objects exist.
	startControllersLater func()
	// quotas are the ResourceQuotas' index, for provisioning to wait on.
	quotas *frontdoor.QuotaStore
	logs   *logcheck.Watcher
	// nsCache is admission's namespace cache; with the authorizer's
	// caches, what kube calls the API server's informers.
	nsCache *admission.NamespaceCache
	metrics *metrics.Metrics
	traces  *trace.Bus
	authn   *authn.Authenticator
	authz   *rbac.Authorizer
	// Classroom mode: the class, the CA of the HTTPS port, and that port.
	class      *classroom.Class
	pki        serving
	tlsLn      net.Listener
	tlsSrv     *http.Server
	secureAddr string
	secureURL  string
	// background runs goroutines (the compactor, the controllers) that
	// must end before etcd stops.
	background     sync.WaitGroup
	stopBackground context.CancelFunc
	backgroundCtx  context.Context
	errc           chan error
	shutdownOnce   sync.Once
	shutdownErr    error
	stopped        chan struct{}
}

// releaseTimeout bounds how long a failed New waits for what it started
// to stop.
const releaseTimeout = 30 * time.Second

// Run starts kubelab and serves until ctx is done or something fatal
// happens, then shuts down. It returns nil after a clean stop on ctx.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while starting, e.g. Ctrl-C while waiting for etcd.
			return nil
		}
		return err
	}
	s.Start()
	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "cause", context.Cause(ctx))
	case runErr = <-s.errc:
		s.log.Error("shutting down after a fatal error", "error", runErr)
	}
	timeout := cfg.ShutdownTimeout
	if timeout == 0 {
		timeout = DefaultConfig().ShutdownTimeout
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return errors.Join(runErr, s.Shutdown(sctx))
}

// New starts etcd (embedded, or a client of cfg.EtcdEndpoints), binds the
// listener, writes the admin kubeconfig and builds the router, but serves
// nothing until Start. ctx bounds only the start-up. If New fails, or ctx
// ends before it is done, everything it started is stopped again (etcd's
// data dir is unlocked, no goroutine is left) before it returns.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		out:     os.Stderr,
		errc:    make(chan error, 2),
		stopped: make(chan struct{}),

		shutdownStarted: make(chan struct{}),
	}
	if s.log == nil {
		level, _ := parseLogLevel(cfg.LogLevel)
		s.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	s.logs = logcheck.New()
	s.log = slog.New(s.logs.Wrap(s.log.Handler()))
	s.backgroundCtx, s.stopBackground = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			err = errors.Join(err, s.Shutdown(rctx))
		}
	}()

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if s.etcd, err = startEtcd(ctx, cfg, s.log, &s.shuttingDown); err != nil {
		return nil, err
	}
	s.stops.push(func(context.Context) error { s.etcd.Stop(); return nil })
	// Background work reads etcd, so it ends first.
	s.stops.push(func(context.Context) error {
		s.stopBackground()
		s.background.Wait()
		close(s.stopped)
		return nil
	})
	if err := claimCore(ctx, s.etcd.Client(), cfg.APIServer); err != nil {
		return nil, err
	}
	s.metrics = metrics.New()
	s.metrics.InstrumentEtcd(s.etcd.Client())
	s.etcdSpace = etcdspace.New(s.etcd.Client(), s.log)
	s.replicas = replicas.New(s.etcd.Client(), s.log)
	s.metrics.Gauge("kubelab_etcd_out_of_space", "1 while etcd's NOSPACE alarm is raised and it refuses every write.", func() float64 {
		if s.etcdSpace.State().Full {
			return 1
		}
		return 0
	})
	s.metrics.Counter("kubelab_etcd_space_recoveries_total", "NOSPACE alarms this server compacted, defragmented and disarmed.", func() float64 {
		return float64(s.etcdSpace.State().Recoveries)
	})
	if s.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	// Shutdown closes a listener only if it was serving.
	s.stops.push(func(context.Context) error { s.ln.Close(); return nil })
	if len(cfg.ProxyProtocolFrom) > 0 {
		if s.ln, err = proxied(s.ln, cfg.ProxyProtocolFrom); err != nil {
			return nil, err
		}
	}
	// The CA exists in every mode: the root-CA publisher gives it to every
	// namespace, and classroom mode also serves HTTPS with it.
	if !cfg.kubeCore() {
		if s.pki, err = s.loadServing(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Classroom {
		if s.tlsLn, err = net.Listen("tcp", cfg.SecureListen); err != nil {
			return nil, fmt.Errorf("--secure-listen: %w", err)
		}
		s.stops.push(func(context.Context) error { s.tlsLn.Close(); return nil })
		if len(cfg.ProxyProtocolFrom) > 0 {
			if s.tlsLn, err = proxied(s.tlsLn, cfg.ProxyProtocolFrom); err != nil {
				return nil, err
			}
		}
		s.secureAddr = s.tlsLn.Addr().String()
		s.secureURL = "https" + strings.TrimPrefix(serverURL(cfg.SecureListen, s.tlsLn.Addr()), "http")
		if cfg.PublishedSecurePort != 0 {
			host, _, _ := net.SplitHostPort(strings.TrimPrefix(s.secureURL, "https://"))
			s.secureURL = "https://" + net.JoinHostPort(host, s.securePort())
		}
	}
	if !cfg.kubeCore() {
		// The kube core compacts etcd itself, as kube-apiserver does.
		s.etcdCompactor = etcd3.NewCompactor(s.etcd.Client(), s.log)
		s.compactor = s.etcdCompactor
	}
	s.url = serverURL(cfg.Listen, s.ln.Addr())
	s.kubeconfig = filepath.Join(cfg.DataDir, kubeconfigFile)
	adminURL, caPEM := s.url, []byte(nil)
	if cfg.Classroom {
		adminURL, caPEM = s.secureURL, s.pki.CertPEM()
	}
	if s.adminTokenHash, err = adminKubeconfig(cfg.DataDir, adminURL, caPEM, cfg.AdminToken); err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	s.newEcho()
	// The web UI's views prove their requests with it to the front door.
	s.viewKey = rand.Text()
	// The servers Start serves with stop after the shutdown hooks, pushed
	// later and so run earlier, have ended the long-running requests.
	s.stops.push(s.stopServing)
	install := s.installAPI
	if cfg.kubeCore() {
		install = s.installKubeCore
	}
	if err := install(ctx); err != nil {
		return nil, err
	}
	// Building the OpenAPI documents and seeding leave a lot of garbage;
	// give it back to the OS now rather than carry it as resident memory.
	debug.FreeOSMemory()
	return s, nil
}

// installAPI serves the Kubernetes API and seeds the lesson's demo state.
// Its watches end when shutdown begins, so they do not hold it up.
func (s *Server) installAPI(ctx context.Context) error {
	// The reviews ask the front door, which is assembled over the API.
	var door *frontdoor.FrontDoor
	resources := append(registry.BuiltinResources(), frontdoor.Reviews(func() *frontdoor.FrontDoor { return door })...)
	s.extensions = newExtensions()
	resources = append(resources, s.extensions.Resources()...)
	docs, err := openapi.New(append(openapi.ResourcesOf(resources), aggregator.APIServicesOpenAPI), openapi.Info{Title: "Kubernetes", Version: kubeapi.Version.GitVersion})
	if err != nil {
		return err
	}
	api, err := kubeapi.New(registry.Config{
		Client: s.etcd.Client(), Logger: s.log,
		WatchFromEtcd: !s.cfg.WatchCache, ReplayEtcdHistory: s.cfg.WatchCacheReplayEtcdHistory,
		EventFreshDuration: s.cfg.WatchCacheEventFreshness,
		Resources:          resources, TypeConverter: docs.TypeConverter(),
	})
	if err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { api.Stop() })
	api.Install(s.echo)
	docs.Register(s.echo)
	attempts := &countedAttempts{Store: etcdstore.New(s.etcd.Client())}
	s.metrics.Counter("kubelab_quiz_submissions_total", "Quiz attempts submitted and stored.", func() float64 { return float64(attempts.n.Load()) })
	if err := quizhttp.Install(s.echo, quizhttp.Config{Store: attempts, Logger: s.log, RequireSignIn: s.cfg.Classroom, Layout: web.SectionPage("quiz"),
		Policy: quiz.Policy{Attempts: s.cfg.QuizAttempts, Reveal: quiz.Reveal(s.cfg.QuizReveal), ClosesAt: s.cfg.QuizClosesAt}, DisplayNames: s.displayNames, ClassName: s.cfg.ClassName,
		Students: s.students, Progress: labstore.New(s.etcd.Client()).List}); err != nil {
		return err
	}
	s.api = api
	if door, err = s.buildPipeline(ctx, api); err != nil {
		return fmt.Errorf("request pipeline: %w", err)
	}
	api.SetPipeline(door.Pipeline)
	s.pipelineReady.Store(true)
	s.echo.Use(door.Middleware())
	perUser, watchesPerUser := 0, 0
	if s.cfg.Classroom {
		perUser, watchesPerUser = MaxUserInflight, MaxUserWatches
	}
	in := newInflight(s.cfg.MaxRequestsInflight, s.cfg.MaxMutatingRequestsInflight, perUser, watchesPerUser, s.cfg.AdaptiveInflightLimit)
	s.echo.Use(limit(in, s.cfg.RequestTimeout))
	if s.cfg.Classroom {
		s.echo.Use(limitWrites(newWriteBudgets(WriteBytesPerSecond, WriteBurstBytes, s.replicas.Count)))
	}
	// Within the limits: a form being read holds its sender's place.
	s.echo.Use(guardForms)
	s.echo.Use(explainEtcdFull(s.etcdSpace))
	for kind, l := range map[string]*adaptive.Limit{"reads": in.adaptiveReads, "mutations": in.adaptiveMutations} {
		if l == nil {
			continue
		}
		s.metrics.Gauge("kubelab_adaptive_inflight_limit_"+kind, "The adaptive limit on "+kind+" in flight now (under the hard cap).", func() float64 { return float64(l.Stats().Limit) })
		s.metrics.Gauge("kubelab_adaptive_inflight_baseline_seconds_"+kind, "The usual median latency of "+kind+" the adaptive limit compares with.", func() float64 { return l.Stats().Baseline.Seconds() })
		s.metrics.Counter("kubelab_adaptive_inflight_refused_total_"+kind, "Requests ("+kind+") refused with 429 by the adaptive limit.", func() float64 { return float64(l.Stats().Refused) })
	}
	if err := s.startExtensions(api, docs); err != nil {
		return err
	}
	s.installMetrics()
	if s.cfg.Classroom {
		s.class = s.newClass()
	}
	s.installClassroom()
	if err := s.startKeepers(ctx); err != nil {
		return err
	}
	s.startControllersLater()
	if err := api.SeedDemo(registry.WithUser(ctx, kubeapi.Seeder)); err != nil {
		return err
	}
	podStore, podsCache, err := s.pods()
	if err != nil {
		return err
	}
	deps := webui.Deps{API: api, Pods: podStore, PodsCache: podsCache, Traces: s.traces,
		Compactor: s.etcdCompactor, Self: s.webSelf(), Etcd: s.etcd.Client(), Logger: s.log}
	// One count of each user's websockets, for the live views and the labs.
	var websockets wshub.Counter
	if s.cfg.Classroom {
		websockets = newUserCounts(MaxUserWebsockets)
		deps.Classroom = true
	}
	deps.Websockets = websockets
	ui, err := webui.Install(s.echo, deps)
	if err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { ui.Close() })
	s.pageNotFound = ui.NotFound
	kubeconfig, _ := filepath.Abs(s.kubeconfig)
	term := terminal.Install(s.echo, terminal.Config{Router: s.echo, Etcd: s.etcd.Client(), Classroom: s.cfg.Classroom, Processes: s.cfg.TerminalProcesses,
		Kubeconfig: kubeconfig, Websockets: websockets, Authenticate: s.authn.AuthenticateRequest, Logger: s.log})
	s.OnShutdown(func(context.Context) { term.Close() })
	labs, err := labhttp.Install(s.echo, labhttp.Config{Pods: labPods{store: podStore, cache: podsCache}, Etcd: s.etcd.Client(), Traces: s.traces, Quizzes: attempts,
		Reset: s.resetNamespace, Authenticate: s.authn.AuthenticateToken, Mint: s.mintDashboardSession, SessionCookie: authn.NewSessionCookie,
		RequireSignIn: s.cfg.Classroom, Websockets: websockets, StuckAfter: s.cfg.StuckAfter, Layout: web.SectionPage("labs"), RoomLayout: web.SectionPage("room"), Logger: s.log,
		Class: s.class, EtcdSpace: s.etcdSpace, Remove: s.removeFromRoom})
	if err != nil {
		return err
	}
	s.OnShutdown(func(context.Context) { labs.Close() })
	s.metrics.Gauge("kubelab_websocket_clients", "Browser websockets open (live views).", func() float64 { return float64(ui.Stats().Clients) })
	s.metrics.Counter("kubelab_websocket_slow_clients_total", "Browser websockets closed for not keeping up (they resume by resourceVersion).", func() float64 {
		return float64(ui.Stats().TooSlow)
	})
	return nil
}

// newEcho builds the router: quiet, with our error handler and kube's
// health endpoints.
func (s *Server) newEcho() {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Listener = s.ln
	limitConnections(e.Server)
	e.StdLogger = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	e.HTTPErrorHandler = s.handleError
	// Before routing, so that every answer carries it, a 421 too.
	e.Pre(noSniff)
	if !s.cfg.Classroom && !s.cfg.LocalModeAdminOnNetwork {
		e.Pre(loopbackHostOnly) // before routing: no route answers a rebound name
	}
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			r := c.Request()
			s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "error", err, "stack", string(stack))
			return err
		},
	}))
	// Before routing: plain HTTP from the network never reaches a handler.
	e.Pre(s.requireTLS)
	// Before anything reads a body.
	e.Use(bodyDeadline(s.cfg.RequestTimeout))
	e.Use(compressPages())
	s.echo = e
	if !s.cfg.kubeCore() {
		// The kube core serves kube's own health endpoints.
		s.installHealth()
	}
	if s.cfg.Profiling {
		// net/http/pprof's handlers, on the API port as in kube-apiserver.
		e.Any("/debug/pprof/*", echo.WrapHandler(http.HandlerFunc(pprofHandler)))
	}
}

// Start serves HTTP in the background, starts the compactor if there is one,
// and watches etcd for fatal errors, which Run receives.
func (s *Server) Start() {
	// The banner first: the listener is already bound, and whoever sees
	// /readyz answer can rely on the banner having been printed.
	fmt.Fprintf(s.out, "kubelab is serving on %s\n", s.url)
	fmt.Fprintf(s.out, "admin kubeconfig: %s (kubectl --kubeconfig %s get --raw /readyz)\n", s.kubeconfig, s.kubeconfig)
	switch m, _ := s.etcd.(*embedetcd.Member); {
	case len(s.cfg.EtcdEndpoints) > 0:
		fmt.Fprintf(s.out, "etcd: %s\n", strings.Join(s.cfg.EtcdEndpoints, ","))
	case m != nil && m.ClientURL() != "":
		fmt.Fprintf(s.out, "embedded etcd: %s (etcdctl %s get --prefix /registry/ --keys-only)\n", m.ClientURL(), strings.Join(m.EtcdctlFlags(), " "))
	case m != nil:
		fmt.Fprintf(s.out, "embedded etcd: no client port (--etcd-listen-client to serve etcdctl)\n")
	}
	if s.tlsLn != nil {
		fmt.Fprintf(s.out, "classroom mode: students sign in at %s/signin (plain HTTP from other machines is redirected there); their kubectl uses it too\n", s.secureURL)
		if s.cfg.TLSCertFile != "" {
			fmt.Fprintf(s.out, "HTTPS serves %s\n", s.pki.Describe())
		} else {
			fmt.Fprintf(s.out, "kubelab's CA, which students' browsers will ask about, has the SHA-256 fingerprint %s; it is %s (--tls-san adds names)\n", caFingerprint(s.pki.CertPEM()), s.pki.Describe())
		}
	}
	go func() {
		if err := s.echo.Start(""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.fatal(fmt.Errorf("serving HTTP: %w", err))
		}
	}()
	if s.tlsLn != nil {
		s.tlsSrv = &http.Server{Handler: s.echo, ErrorLog: s.echo.StdLogger}
		limitConnections(s.tlsSrv)
		go func() {
			if err := s.tlsSrv.Serve(tls.NewListener(s.tlsLn, s.pki.TLSConfig())); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.fatal(fmt.Errorf("serving HTTPS: %w", err))
			}
		}()
	}
	go func() {
		select {
		case err := <-s.etcd.Err():
			if !s.shuttingDown.Load() {
				s.fatal(fmt.Errorf("etcd stopped: %v", err))
			}
		case <-s.stopped:
		}
	}()
	s.startCompactor()
	s.background.Go(func() { s.etcdSpace.Run(s.backgroundCtx, etcdspace.DefaultInterval) })
	if s.cfg.Classroom {
		s.background.Go(func() { s.replicas.Run(s.backgroundCtx) })
	}
}

// Compactor compacts etcd's history every interval until ctx is done, as
// kube-apiserver's storage compactor does; the storage layer provides it.
type Compactor interface {
	Run(ctx context.Context, interval time.Duration)
}

// SetCompactor replaces the periodic compactor that Start runs every
// Config.CompactionInterval (unless that is 0) until Shutdown, which waits
// for it to return before it stops etcd. Call it before Start.
func (s *Server) SetCompactor(c Compactor) { s.compactor = c }

// EtcdCompactor compacts etcd on demand and tells registered watch caches.
func (s *Server) EtcdCompactor() *etcd3.Compactor { return s.etcdCompactor }

func (s *Server) startCompactor() {
	switch {
	case s.cfg.CompactionInterval == 0:
		s.log.Debug("etcd compaction disabled")
	case s.compactor == nil:
		s.log.Debug("no compactor configured", "interval", s.cfg.CompactionInterval)
	default:
		s.background.Go(func() {
			s.compactor.Run(s.backgroundCtx, s.cfg.CompactionInterval)
		})
	}
}

func (s *Server) fatal(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// OnShutdown registers hook to run when shutdown begins, after /readyz
// starts failing and before the HTTP server waits for requests to finish:
// the place to end long-running requests such as watches, which would
// otherwise hold the shutdown up until its timeout. Hooks run in reverse
// order of registration, on the same stack as the stops of what New
// started.
func (s *Server) OnShutdown(hook func(context.Context)) {
	s.stops.push(func(ctx context.Context) error { hook(ctx); return nil })
}

// stopServing lets in-flight requests finish until ctx is done, then
// closes what is left. Before Start it has nothing to wait for.
func (s *Server) stopServing(ctx context.Context) error {
	var errs []error
	if err := s.echo.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping HTTP server: %w", err))
		s.echo.Close()
	}
	if s.tlsSrv != nil {
		if err := s.tlsSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping HTTPS server: %w", err))
			s.tlsSrv.Close()
		}
	}
	return errors.Join(errs...)
}

// Shutdown stops the server in the reverse order of New and Start: readyz
// fails, shutdown hooks run, in-flight requests get until ctx is done to
// finish, background work ends, and etcd stops last. It is safe to call more
// than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.shuttingDown.Store(true)
		close(s.shutdownStarted)
		s.shutdownErr = s.stops.run(ctx)
		s.log.Info("stopped")
	})
	return s.shutdownErr
}

// stopStack is the one place that knows how to stop what kubelab started:
// each thing, once started, pushes its stop, and run stops them newest
// first, so that nothing outlives what it uses.
type stopStack struct {
	mu    sync.Mutex
	stops []func(context.Context) error
}

func (st *stopStack) push(stop func(context.Context) error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stops = append(st.stops, stop)
}

// run pops and runs every stop, the newest first, and joins their errors.
func (st *stopStack) run(ctx context.Context) error {
	var errs []error
	for {
		st.mu.Lock()
		n := len(st.stops)
		if n == 0 {
			st.mu.Unlock()
			return errors.Join(errs...)
		}
		stop := st.stops[n-1]
		st.stops = st.stops[:n-1]
		st.mu.Unlock()
		if err := stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
}

// Echo is the router; routes added before Start are served.
func (s *Server) Echo() *echo.Echo { return s.echo }

// Authenticator checks bearer tokens and mints them for new users.
func (s *Server) Authenticator() *authn.Authenticator { return s.authn }

// Traces is the bus every request's pipeline trace is published on.
func (s *Server) Traces() *trace.Bus { return s.traces }

// API is the Kubernetes API the server serves.
func (s *Server) API() *kubeapi.API { return s.api }

// EtcdClient is the client every store and watch uses.
func (s *Server) EtcdClient() *clientv3.Client { return s.etcd.Client() }

// Logger is the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// URL is where clients reach the server, e.g. http://127.0.0.1:8080.
func (s *Server) URL() string { return s.url }

// KubeconfigPath is the admin kubeconfig's path.
func (s *Server) KubeconfigPath() string { return s.kubeconfig }

// IsAdminToken reports whether token is the admin kubeconfig's bearer token.
func (s *Server) IsAdminToken(token string) bool {
	h := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(h[:], s.adminTokenHash[:]) == 1
}

func pprofHandler(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}

// SecureURL is the HTTPS address of classroom mode, or "" in local mode.
func (s *Server) SecureURL() string { return s.secureURL }

// Class is classroom mode's class of students, or nil in local mode.
func (s *Server) Class() *classroom.Class { return s.class }

// Metrics is where kubelab's Prometheus collectors are registered.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// countedAttempts counts the quiz attempts stored, for /metrics.
type countedAttempts struct {
	quiz.Store
	n atomic.Uint64
}

func (c *countedAttempts) Submit(ctx context.Context, a *quiz.Attempt, limit int) error {
	err := c.Store.Submit(ctx, a, limit)
	if err == nil {
		c.n.Add(1)
	}
	return err
}
