// Package controlplane runs kube's own control plane in kubelab's process,
// as k3s does, over the etcd kubelab already runs: the kube core, chosen
// with --apiserver=kube.
//
// What starts, in this order (Start):
//  1. kube-apiserver, from k8s.io/kubernetes cmd/kube-apiserver/app
//     (apiserver.go): its options, each set with the reason; the data it
//     keeps (its service-account key, its serving certificate); kubelab's
//     front door added to its authenticators (frontdoor.go); its server
//     chain and post-start hooks, on a listener of its own on 127.0.0.1
//     that only its loopback client uses;
//  2. once its /readyz answers ok, the local-mode binding (localmode.go);
//  3. kube-controller-manager's controllers that need no kubelet, from
//     cmd/kube-controller-manager/app (controllers.go), over
//     kube-apiserver's loopback client;
//  4. the lesson's namespace and pods (lesson.go), once the
//     service-account controller has made the namespace's default account;
//  5. kubelab's simulated node (controller/kubelet), through client-go, so
//     that pods are scheduled and run.
//
// Stop stops them in reverse. Requests reach kube-apiserver through
// kubelab's Echo server only: Server is the server.KubeCore kubelab's
// router hands them to.
//
// Only this package and cmd/kubelab import k8s.io/kubernetes: a test
// binary that does not start the kube core must not link it.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubelab/kubelab/controller/kubelet"
	"github.com/kubelab/kubelab/server"
)

// Server is a running kube core.
type Server struct {
	handler http.Handler
	// parts are what Start started, in order; Stop stops them in reverse.
	parts []*running
}

// running is one part of the control plane, running until cancel.
type running struct {
	name   string
	cancel context.CancelFunc
	done   chan error
}

// part is a part's own context, which outlives Start's: it ends on Stop.
func part() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// run runs f in the background until cancel.
func run(name string, ctx context.Context, cancel context.CancelFunc, f func(context.Context) error) *running {
	r := &running{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- f(ctx) }()
	return r
}

// stop cancels the part and waits for it, at most until ctx ends.
func (r *running) stop(ctx context.Context) error {
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s did not stop: %w", r.name, ctx.Err())
	}
}

// readyTimeout bounds the wait for kube-apiserver's /readyz at start: its
// post-start hooks (RBAC's bootstrap policy, the priority-and-fairness
// objects) write to etcd, a few seconds on a small machine.
const readyTimeout = 2 * time.Minute

// Start runs the control plane until Stop, and returns once
// kube-apiserver is ready, the local-mode binding is in place and the
// controllers have started.
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
	s := &Server{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop(ctx))
		}
	}()

	// 1. kube-apiserver.
	apiCtx, stopAPI := part()
	api, err := newAPIServer(apiCtx, cfg)
	if err != nil {
		stopAPI()
		return nil, err
	}
	s.handler = api.handler
	apiserver := run("kube-apiserver", apiCtx, stopAPI, api.run)
	s.parts = append(s.parts, apiserver)
	client, err := kubernetes.NewForConfig(api.loopback)
	if err != nil {
		return nil, fmt.Errorf("kube core: loopback client: %w", err)
	}
	if err := waitReady(ctx, client, apiserver); err != nil {
		return nil, err
	}

	// 2. The local-mode binding.
	if cfg.Local {
		if err := ensureLocalModeBinding(ctx, client); err != nil {
			return nil, fmt.Errorf("kube core: local-mode binding: %w", err)
		}
	}

	// 3. kube-controller-manager's controllers.
	controllersCtx, stopControllers := part()
	controllers, err := newControllers(controllersCtx, api)
	if err != nil {
		stopControllers()
		return nil, err
	}
	s.parts = append(s.parts, run("kube-controller-manager", controllersCtx, stopControllers, controllers))

	// 4. The lesson's namespace and pods, which need the service-account
	// controller.
	if err := seedLesson(ctx, api.loopback, client); err != nil {
		return nil, fmt.Errorf("kube core: the lesson's namespace: %w", err)
	}

	// 5. The simulated node.
	if cfg.SimulatedNode {
		node := kubelet.New(kubelet.Config{Cluster: kubelet.OnClient(client), StartDelay: cfg.PodStartDelay, Logger: cfg.Logger})
		nodeCtx, stopNode := part()
		s.parts = append(s.parts, run("the simulated node", nodeCtx, stopNode, func(ctx context.Context) error { node.Run(ctx); return nil }))
	}
	return s, nil
}

// waitReady waits until kube-apiserver's /readyz answers ok through its
// loopback client, or it stops, or readyTimeout passes.
func waitReady(ctx context.Context, client kubernetes.Interface, apiserver *running) error {
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
		case err := <-apiserver.done:
			apiserver.done <- err
			return fmt.Errorf("kube-apiserver stopped while starting: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready within %s: %v", readyTimeout, last)
		case <-tick.C:
		}
	}
}

// ServeHTTP serves a request that came through kubelab's front door.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r.WithContext(throughFrontDoor(r.Context())))
}

// Stop stops what Start started, the newest first (the controllers, then
// kube-apiserver, which ends its watches and drains its requests), each
// waited for at most until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	var errs []error
	for i := len(s.parts) - 1; i >= 0; i-- {
		if err := s.parts[i].stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
