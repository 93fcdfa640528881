package etcd3_test

import (
	"context"
	"testing"

	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestCompactedRevision reads etcd's compacted revision as etcd has it,
// however it was compacted.
func TestCompactedRevision(t *testing.T) {
	client := storagetest.StartEtcd(t).Client()
	ctx := context.Background()
	if rev, err := etcd3.CompactedRevision(ctx, client); err != nil || rev != 0 {
		t.Fatalf("fresh etcd: %d, %v; want 0", rev, err)
	}
	var last int64
	for range 5 {
		resp, err := client.Put(ctx, "/registry/kubelab-test", "x")
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	// Behind kubelab's back, as etcdctl compact does.
	if _, err := client.Compact(ctx, last-1); err != nil {
		t.Fatal(err)
	}
	if rev, err := etcd3.CompactedRevision(ctx, client); err != nil || rev != last-1 {
		t.Fatalf("after compacting at %d: %d, %v", last-1, rev, err)
	}
}
