package replicas_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/storage/replicas"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestReplicasCountEachOther: replicas sharing an etcd see each other
// join, and see one that stops leave at once, not a lease's TTL later.
func TestReplicasCountEachOther(t *testing.T) {
	client := storagetest.StartEtcd(t).Client()
	var running sync.WaitGroup
	t.Cleanup(running.Wait)
	start := func() (*replicas.Set, context.CancelFunc) {
		s := replicas.New(client, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		running.Go(func() { s.Run(ctx) })
		return s, cancel
	}
	first, _ := start()
	if n := first.Count(); n != 1 {
		t.Fatalf("a replica alone counts %d", n)
	}
	second, stopSecond := start()
	third, _ := start()
	for name, s := range map[string]*replicas.Set{"first": first, "second": second, "third": third} {
		eventually.Holds(t, "the "+name+" replica counting three", func() (bool, error) { return s.Count() == 3, nil })
	}
	stopSecond()
	eventually.Holds(t, "the first replica counting two once the second stopped", func() (bool, error) { return first.Count() == 2, nil })
	resp, err := client.Get(context.Background(), replicas.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 2 {
		t.Errorf("keys left in etcd: %v %v, want the two running replicas'", resp, err)
	}
}
