package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubelab/kubelab/storage/embedetcd"
)

// Etcd is the etcd the server stores into: an embedded member or a client of
// an external cluster.
type Etcd interface {
	// Client is the client every store and watch uses.
	Client() *clientv3.Client
	// Ready reports whether etcd can serve a linearizable read right now.
	Ready(ctx context.Context) error
	// Err reports a fatal error of an embedded member; it may be nil.
	Err() <-chan error
	// Stop releases the client and stops an embedded member.
	Stop()
}

var (
	_ Etcd = (*embedetcd.Member)(nil)
	_ Etcd = (*externalEtcd)(nil)
)

const (
	// etcdPKIDir, under the data dir, holds the embedded etcd's CA and
	// certificates in classroom mode, as kubeadm's /etc/kubernetes/pki/etcd.
	etcdPKIDir = "etcd-pki"
	// etcdHealthTimeout matches kube-apiserver's --etcd-healthcheck-timeout.
	etcdHealthTimeout = 2 * time.Second
	// etcdStartTimeout bounds the wait for etcd to come up at start.
	etcdStartTimeout = time.Minute
	// progressNotifyInterval is the interval kube-apiserver's etcd runs with,
	// so watchers learn the current revision even when nothing they watch changes.
	progressNotifyInterval = 5 * time.Second
)

// startEtcd starts the embedded member, or connects to the external cluster
// and waits until it answers.
func startEtcd(ctx context.Context, cfg Config, log *slog.Logger, stopping *atomic.Bool) (Etcd, error) {
	if len(cfg.EtcdEndpoints) > 0 {
		return connectEtcd(ctx, cfg.EtcdEndpoints, log)
	}
	var (
		clientURL string
		clientTLS *embedetcd.ClientTLS
	)
	if cfg.EtcdListenClient != "" {
		u, err := etcdURL(cfg.EtcdListenClient)
		if err != nil {
			return nil, err
		}
		clientURL = u.String()
		if cfg.Classroom {
			// A class's network is not trusted, and neither are the pages
			// students open: etcd's plain port would hand over everything
			// kubelab keeps. The instructor gets a certificate instead.
			files, err := embedetcd.WritePKI(filepath.Join(cfg.DataDir, etcdPKIDir), u.Hostname())
			if err != nil {
				return nil, err
			}
			clientTLS = &files
		}
	}
	return embedetcd.Start(embedetcd.Config{
		Name:                   "kubelab",
		DataDir:                filepath.Join(cfg.DataDir, "etcd"),
		ClientURL:              clientURL,
		ClientTLS:              clientTLS,
		ProgressNotifyInterval: progressNotifyInterval,
		StartTimeout:           etcdStartTimeout,
		UnsafeNoFsync:          cfg.EtcdUnsafeNoFsync,
		QuotaBackendBytes:      cfg.EtcdQuotaBackendBytes,
		Logger:                 etcdLogger(log, stopping),
	})
}

// EtcdctlFlags are the flags etcdctl needs to reach the embedded etcd's
// client port (with the admin certificate in classroom mode); none without
// a port or with an external cluster.
func (s *Server) EtcdctlFlags() []string {
	if m, ok := s.etcd.(*embedetcd.Member); ok {
		return m.EtcdctlFlags()
	}
	return nil
}

// externalEtcd is a client of an etcd cluster kubelab does not run.
type externalEtcd struct {
	client *clientv3.Client
}

func connectEtcd(ctx context.Context, endpoints []string, log *slog.Logger) (*externalEtcd, error) {
	var urls []string
	for _, ep := range endpoints {
		u, err := etcdURL(ep)
		if err != nil {
			return nil, err
		}
		urls = append(urls, u.String())
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   urls,
		DialTimeout: 5 * time.Second,
		// kube-apiserver's keepalives: a member that hangs (rather than
		// closing its connections) is noticed within 40 s and its
		// requests go to another member.
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", urls, err)
	}
	e := &externalEtcd{client: client}
	if err := waitReady(ctx, e, etcdStartTimeout, log); err != nil {
		client.Close()
		return nil, fmt.Errorf("etcd at %v: %w", urls, err)
	}
	return e, nil
}

// waitReady retries, since in `docker compose up` the etcd cluster may still
// be electing a leader when kubelab starts.
func waitReady(ctx context.Context, e Etcd, timeout time.Duration, log *slog.Logger) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		rctx, rcancel := context.WithTimeout(wctx, etcdHealthTimeout)
		err := e.Ready(rctx)
		rcancel()
		if err == nil {
			return nil
		}
		if attempt == 1 {
			log.Info("waiting for etcd", "error", err)
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("stopped waiting for etcd: %w", ctx.Err())
			}
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		case <-time.After(time.Second):
		}
	}
}

func (e *externalEtcd) Client() *clientv3.Client { return e.client }

// Ready does the same linearizable read as the embedded member's Ready.
func (e *externalEtcd) Ready(ctx context.Context) error {
	_, err := e.client.Get(ctx, "health")
	return err
}

// Err is nil: a client has no fatal error of its own; an unreachable cluster
// shows up in Ready.
func (e *externalEtcd) Err() <-chan error { return nil }

func (e *externalEtcd) Stop() { e.client.Close() }
