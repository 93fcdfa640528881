package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func TestPutGetList(t *testing.T) {
	ctx := context.Background()
	s := New(storagetest.StartEtcd(t).Client())
	s.records.PageSize = 3
	if _, err := s.Get(ctx, "alice"); !errors.Is(err, labs.ErrNotFound) {
		t.Fatalf("get before put: %v, want ErrNotFound", err)
	}
	p := labs.NewProgress("alice", "k8s-101", "alice")
	p.Start(labs.Find(labs.All(), "watch"), time.Now(), 42)
	if err := s.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "alice")
	if err != nil || got.Labs["watch"] == nil || got.Labs["watch"].StepRev != 42 || got.Class != "k8s-101" {
		t.Fatalf("get: %+v %v", got, err)
	}
	// A write of stale progress is refused.
	stale := *got
	got.Current = "etcd"
	if err := s.Put(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, &stale); !errors.Is(err, labs.ErrConflict) {
		t.Errorf("stale put: %v, want ErrConflict", err)
	}
	if err := s.Put(ctx, labs.NewProgress("alice", "", "")); !errors.Is(err, labs.ErrConflict) {
		t.Errorf("second create: %v, want ErrConflict", err)
	}
	// A slash in a name stays inside that name's key.
	for i := range 7 {
		if err := s.Put(ctx, labs.NewProgress(fmt.Sprintf("s%d/x", i), "", "")); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 8 {
		t.Fatalf("list across pages: %d %v", len(all), err)
	}
	if _, err := s.Get(ctx, "s1"); !errors.Is(err, labs.ErrNotFound) {
		t.Errorf("s1: %v", err)
	}
}
