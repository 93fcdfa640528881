// Package kubelabtest starts a whole kubelab server for tests: embedded
// etcd in a temp dir, free loopback ports, stopped by t.Cleanup, so that
// tests can drive it with the real kubectl, etcdctl and client-go.
package kubelabtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// Lab is a running kubelab.
type Lab struct {
	*server.Server
	// EtcdURL is where etcdctl reaches the embedded etcd.
	EtcdURL string
}

// Start runs kubelab until the test ends. Options tune its Config.
func Start(t testing.TB, options ...func(*server.Config)) *Lab {
	t.Helper()
	etcdAddr := storagetest.FreeAddr(t)
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.EtcdListenClient = etcdAddr
	cfg.CompactionInterval = 0
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, o := range options {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatalf("start kubelab: %v", err)
	}
	s.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("stop kubelab: %v", err)
		}
	})
	return &Lab{Server: s, EtcdURL: "http://" + etcdAddr}
}
