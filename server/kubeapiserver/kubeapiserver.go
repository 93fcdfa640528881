// Package kubeapiserver runs kube-apiserver's own code (k8s.io/kubernetes
// cmd/kube-apiserver/app) in kubelab's process, as k3s does, over the etcd
// kubelab already runs: the kube core, chosen with --apiserver=kube.
//
// What starts, in this order (Start):
//  1. the data it keeps: the service-account signing key, made at first
//     start, and the directory of its self-signed serving certificate;
//  2. kube-apiserver's options, each set below with the reason;
//  3. its configuration, where kubelab's front door is added to the
//     authenticators (frontdoor.go);
//  4. its server chain (aggregator, kube APIs, apiextensions) and its
//     post-start hooks, on a listener of its own on 127.0.0.1 that only
//     its loopback client uses;
//  5. once it is ready, the local-mode binding (localmode.go).
//
// Requests reach it through kubelab's Echo server only: Server is the
// server.KubeCore kubelab's router hands them to.
//
// Only this package and cmd/kubelab import k8s.io/kubernetes: a test
// binary that does not start the kube core must not link it.
package kubeapiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/request/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/kubelab/kubelab/server"
)

// Server is a running kube core.
type Server struct {
	handler http.Handler
	cancel  context.CancelFunc
	done    chan error
}

// readyTimeout bounds the wait for kube's /readyz at start: its post-start
// hooks (RBAC's bootstrap policy, the priority-and-fairness objects)
// write to etcd, a few seconds on a small machine.
const readyTimeout = 2 * time.Minute

// Start runs kube-apiserver until Stop, and returns once its /readyz
// answers ok and the local-mode binding is in place.
//
// Its signature is server.StartKubeCore: cmd/kubelab hands it to kubelab.
func Start(ctx context.Context, cfg server.KubeCoreConfig) (_ server.KubeCore, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// kube logs through klog; kubelab's log is slog.
	klog.SetSlogLogger(kubeLogger(cfg.Logger))

	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("kube core: %w", err)
	}
	saKey, err := serviceAccountKey(filepath.Join(cfg.Dir, "sa.key"))
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kube core: its loopback listener: %w", err)
	}
	opts, err := kubeOptions(cfg, saKey, listener)
	if err != nil {
		listener.Close()
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	if err := opts.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube core: feature gates: %w", err)
	}
	completed, err := opts.Complete(runCtx)
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube core: options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		listener.Close()
		return nil, fmt.Errorf("kube core: options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube core: %w", err)
	}
	// The front door's identities come first; then kube's own (the
	// loopback client's token, service-account tokens). Each of the three
	// servers keeps its own copy of the generic config: the aggregator's
	// serves requests, and the others get the same for consistency.
	for _, generic := range []*genericapiserver.Config{config.KubeAPIs.ControlPlane.Generic, &config.ApiExtensions.GenericConfig.Config, &config.Aggregator.GenericConfig.Config} {
		generic.Authentication.Authenticator = union.New(frontDoorAuthenticator{isAdmin: cfg.IsAdminToken}, generic.Authentication.Authenticator)
	}
	completedConfig, err := config.Complete()
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube core: %w", err)
	}
	chain, err := app.CreateServerChain(completedConfig)
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube core: %w", err)
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube core: %w", err)
	}
	s := &Server{handler: chain.GenericAPIServer.Handler, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- prepared.Run(runCtx) }()

	loopback := rest.CopyConfig(chain.GenericAPIServer.LoopbackClientConfig)
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		s.Stop(ctx)
		return nil, fmt.Errorf("kube core: loopback client: %w", err)
	}
	if err := s.waitReady(ctx, client); err != nil {
		s.Stop(ctx)
		return nil, err
	}
	if cfg.Local {
		if err := ensureLocalModeBinding(ctx, client); err != nil {
			s.Stop(ctx)
			return nil, fmt.Errorf("kube core: local-mode binding: %w", err)
		}
	}
	return s, nil
}

// kubeOptions are kube-apiserver's options, set as its flags would be
// (the same names a kube-apiserver command line uses), each with why.
func kubeOptions(cfg server.KubeCoreConfig, saKey string, listener net.Listener) (*options.ServerRunOptions, error) {
	opts := options.NewServerRunOptions()
	args := []string{
		// kubelab's etcd: the embedded member, or the cluster it was
		// given. kubelab's own core is not started beside this one.
		"--etcd-servers=" + strings.Join(cfg.EtcdServers, ","),
		// Its own listener, on loopback: its loopback client (post-start
		// hooks, admission's informers) dials it. Everyone else comes
		// through kubelab's port; --secure-port is the listener's below.
		"--bind-address=127.0.0.1",
		// Its serving certificate is self-signed at first start and kept.
		"--cert-dir=" + filepath.Join(cfg.Dir, "certs"),
		// Identity of each request comes from the front door (local mode:
		// anonymous, which the local-mode binding makes cluster-admin) or
		// from kube's own credentials. Anonymous requests straight to the
		// loopback listener are refused.
		"--anonymous-auth=false",
		// As every kubeadm cluster: nodes by the Node authorizer, everyone
		// else by RBAC.
		"--authorization-mode=Node,RBAC",
		// kube's default admission plugins, and NodeRestriction with the
		// Node authorizer, as kubeadm enables it.
		"--enable-admission-plugins=NodeRestriction",
		// Service-account tokens: one key, made at first start and kept in
		// the data dir, signs and verifies them; the issuer is the
		// in-cluster name of the API, as in the reference cluster.
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		// Service IPs come from kube's allocator in this range, the one
		// kind and the reference cluster use.
		"--service-cluster-ip-range=10.96.0.0/16",
		// API Priority and Fairness, on as in every real cluster: its
		// FlowSchemas and PriorityLevelConfigurations are served and obeyed.
		"--enable-priority-and-fairness=true",
		// kubelab's own flags of kube's names.
		"--request-timeout=" + cfg.RequestTimeout.String(),
		"--max-requests-inflight=" + strconv.Itoa(cfg.MaxRequestsInflight),
		"--max-mutating-requests-inflight=" + strconv.Itoa(cfg.MaxMutatingRequestsInflight),
		"--profiling=" + strconv.FormatBool(cfg.Profiling),
	}
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range opts.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube core: options: %w", err)
	}
	opts.SecureServing.Listener = listener
	opts.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	return opts, nil
}

// waitReady waits until kube's /readyz answers ok through its loopback
// client, or the server stops, or readyTimeout passes.
func (s *Server) waitReady(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		last = fmt.Errorf("%w: %s", err, body)
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("kube core stopped while starting: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("kube core not ready within %s: %v", readyTimeout, last)
		case <-tick.C:
		}
	}
}

// ServeHTTP serves a request that came through kubelab's front door.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r.WithContext(throughFrontDoor(r.Context())))
}

// Stop shuts kube-apiserver down (it ends its watches and drains its
// requests) and waits for it, at most until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("kube core: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kube core did not stop: %w", ctx.Err())
	}
}
