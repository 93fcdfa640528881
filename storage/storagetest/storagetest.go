// Package storagetest starts real embedded etcd members for tests: a temp
// dir, free loopback ports, no fsync, a quiet logger, stopped by t.Cleanup.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubelab/kubelab/internal/freeport"
	"github.com/kubelab/kubelab/storage/embedetcd"
)

// StartEtcd starts a single-member etcd in a fresh temp dir with a loopback
// client listener (so tests can also reach it the way etcdctl would).
func StartEtcd(t testing.TB) *embedetcd.Member {
	t.Helper()
	return StartEtcdIn(t, t.TempDir())
}

// StartEtcdIn starts a single-member etcd on dataDir, e.g. to restart one on
// the data a previous member left behind. The caller stops it (Cleanup also does).
func StartEtcdIn(t testing.TB, dataDir string) *embedetcd.Member {
	t.Helper()
	return StartEtcdWith(t, embedetcd.Config{DataDir: dataDir})
}

// StartEtcdWith starts a single-member etcd as cfg says, in a fresh temp
// dir unless cfg names one, with StartEtcd's listeners, fsync and logger.
func StartEtcdWith(t testing.TB, cfg embedetcd.Config) *embedetcd.Member {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.ClientURL, cfg.PeerURL = "http://"+FreeAddr(t), "http://"+FreeAddr(t)
	cfg.UnsafeNoFsync, cfg.ProgressNotifyInterval, cfg.Logger = true, time.Second, zap.NewNop()
	m, err := embedetcd.Start(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(m.Stop)
	return m
}

// Cluster is a multi-member etcd cluster on loopback, each member in its own data dir.
type Cluster struct {
	Configs []embedetcd.Config
	Members []*embedetcd.Member
}

// StartCluster starts n members on loopback and waits until all are ready.
// A port that FreeAddr found free can be taken by another test before the
// member binds it; then the cluster is started again on fresh ports.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	var c *Cluster
	err := freeport.Retry(func() error {
		var err error
		if c, err = startCluster(t, n); err != nil {
			c.stop()
		}
		return err
	})
	if err != nil {
		t.Fatalf("start etcd cluster: %v", err)
	}
	t.Cleanup(c.stop)
	return c
}

func startCluster(t testing.TB, n int) (*Cluster, error) {
	c := &Cluster{}
	var initial []string
	for i := range n {
		cfg := embedetcd.Config{
			Name:                   fmt.Sprintf("m%d", i),
			DataDir:                t.TempDir(),
			ClientURL:              "http://" + FreeAddr(t),
			PeerURL:                "http://" + FreeAddr(t),
			ClusterToken:           "kubelab-test",
			UnsafeNoFsync:          true,
			ProgressNotifyInterval: time.Second,
			Logger:                 zap.NewNop(),
		}
		initial = append(initial, cfg.Name+"="+cfg.PeerURL)
		c.Configs = append(c.Configs, cfg)
	}
	c.Members = make([]*embedetcd.Member, n)
	errs := make(chan error, n)
	for i := range c.Configs {
		c.Configs[i].InitialCluster = strings.Join(initial, ",")
		go func(i int) {
			m, err := embedetcd.Start(c.Configs[i])
			c.Members[i] = m
			errs <- err
		}(i)
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return c, first
}

// stop stops the members that are running.
func (c *Cluster) stop() {
	for _, m := range c.Members {
		if m != nil {
			m.Stop()
		}
	}
}

// Endpoints lists every member's client URL.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, cfg := range c.Configs {
		eps = append(eps, cfg.ClientURL)
	}
	return eps
}

// Client returns a client that knows every member, like kube-apiserver's
// --etcd-servers with the whole cluster listed.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, outside the range outgoing connections take their ports from.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FillUntilNoSpace writes value under key(i), i = 0, 1, ..., until etcd
// refuses a write with NOSPACE (its space quota is reached), and returns
// how many writes it took: 0 if the alarm was raised already.
func FillUntilNoSpace(t testing.TB, c *clientv3.Client, key func(i int) string, value string) int {
	t.Helper()
	for i := 0; i < 10_000; i++ {
		_, err := c.Put(context.Background(), key(i), value)
		switch {
		case errors.Is(err, rpctypes.ErrNoSpace):
			return i
		case err != nil:
			t.Fatalf("write %d: %v", i, err)
		}
	}
	t.Fatalf("10,000 writes of %d bytes and etcd was not out of space", len(value))
	return 0
}
