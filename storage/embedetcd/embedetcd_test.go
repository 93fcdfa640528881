package embedetcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func TestStartWithoutClientListener(t *testing.T) {
	m, err := embedetcd.Start(embedetcd.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if m.ClientURL() != "" {
		t.Fatalf("ClientURL = %q, want none", m.ClientURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.Client().Put(ctx, "/registry/x", "y"); err != nil {
		t.Fatalf("put through in-process client: %v", err)
	}
	if err := m.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]embedetcd.Config{
		"no data dir":        {},
		"cluster, no peer":   {DataDir: t.TempDir(), InitialCluster: "a=http://127.0.0.1:1"},
		"unparseable client": {DataDir: t.TempDir(), ClientURL: "http://[::1"},
	} {
		t.Run(name, func(t *testing.T) {
			if m, err := embedetcd.Start(cfg); err == nil {
				m.Stop()
				t.Fatal("Start succeeded, want an error")
			}
		})
	}
}

func TestThreeMemberClusterSurvivesOneMemberStopped(t *testing.T) {
	c := storagetest.StartCluster(t, 3)
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Put(ctx, "/registry/a", "1"); err != nil {
		t.Fatal(err)
	}
	c.Members[0].Stop()
	c.Members[0] = nil
	if _, err := cl.Put(ctx, "/registry/b", "2"); err != nil {
		t.Fatalf("put with one member down: %v", err)
	}
	resp, err := cl.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 2 {
		t.Fatalf("got %d keys, want 2", len(resp.Kvs))
	}
}
