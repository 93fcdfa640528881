package records_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubelab/kubelab/storage/records"
	"github.com/kubelab/kubelab/storage/storagetest"
)

type note struct {
	Text string `json:"text"`
}

// A write guarded by the revision read succeeds once: a second writer
// holding the same revision is refused and writes nothing, and a create
// (revision 0) is refused once the key exists.
func TestPutIfUnchangedRefusesAStaleWrite(t *testing.T) {
	ctx := context.Background()
	r := records.New(storagetest.StartEtcd(t).Client())
	const k = "/kubelab/test/a"
	if ok, _, err := r.PutIfUnchanged(ctx, map[string]int64{k: 0}, map[string]any{k: note{"first"}}); !ok || err != nil {
		t.Fatalf("create: %v %v", ok, err)
	}
	if ok, _, err := r.PutIfUnchanged(ctx, map[string]int64{k: 0}, map[string]any{k: note{"again"}}); ok || err != nil {
		t.Fatalf("a second create: %v %v, want refused", ok, err)
	}
	var n note
	found, rev, err := r.Get(ctx, k, &n)
	if !found || err != nil || n.Text != "first" {
		t.Fatalf("get: %v %+v %v", found, n, err)
	}
	if ok, wrote, err := r.PutIfUnchanged(ctx, map[string]int64{k: rev}, map[string]any{k: note{"second"}}); !ok || err != nil || wrote <= rev {
		t.Fatalf("update at %d: %v %d %v", rev, ok, wrote, err)
	}
	// Two keys, one of them stale: neither is written.
	const other = "/kubelab/test/b"
	if ok, _, err := r.PutIfUnchanged(ctx, map[string]int64{k: rev, other: 0}, map[string]any{k: note{"lost"}, other: note{"lost"}}); ok || err != nil {
		t.Fatalf("stale pair: %v %v, want refused", ok, err)
	}
	if found, _, _ := r.Get(ctx, other, &n); found {
		t.Fatal("a refused transaction wrote the other key")
	}
	if _, _, err := r.Get(ctx, k, &n); err != nil || n.Text != "second" {
		t.Fatalf("after the refused pair: %+v %v", n, err)
	}
}

// A list reads every page at the first page's revision: a key written
// between two pages is not in the list, and keys outside the prefix never
// are.
func TestListPagesAgree(t *testing.T) {
	ctx := context.Background()
	m := storagetest.StartEtcd(t)
	r := records.New(m.Client())
	r.PageSize = 2
	put := func(k string) {
		t.Helper()
		if ok, _, err := r.PutIfUnchanged(ctx, map[string]int64{k: 0}, map[string]any{k: note{k}}); !ok || err != nil {
			t.Fatalf("put %s: %v %v", k, ok, err)
		}
	}
	for i := range 5 {
		put(fmt.Sprintf("/kubelab/list/%d", i))
	}
	put("/kubelab/listed-not") // shares the prefix's text, not its folder
	var keys []string
	err := r.List(ctx, "/kubelab/list/", func(key string, value []byte, rev int64) error {
		keys = append(keys, key)
		if len(keys) == 1 {
			put("/kubelab/list/9") // between the first page and the next
		}
		if rev == 0 || len(value) == 0 {
			t.Errorf("%s: rev %d value %q", key, rev, value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keys) != "[/kubelab/list/0 /kubelab/list/1 /kubelab/list/2 /kubelab/list/3 /kubelab/list/4]" {
		t.Fatalf("listed %v", keys)
	}
}
