package etcdspace_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/etcdspace"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// quota is the members' space quota here: small, so that a few hundred
// writes of value reach it.
const quota = 8 << 20

var value = strings.Repeat("x", 256<<10)

// fill writes value under the keys key(i) until etcd refuses a write
// with NOSPACE, and returns how many it took (0 if the alarm was still
// raised).
func fill(t *testing.T, c *clientv3.Client, key func(i int) string) int {
	t.Helper()
	return storagetest.FillUntilNoSpace(t, c, key, value)
}

func noSpaceAlarms(t *testing.T, c *clientv3.Client) int {
	t.Helper()
	alarms, err := c.AlarmList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range alarms.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			n++
		}
	}
	return n
}

func startGuard(t *testing.T, c *clientv3.Client) *etcdspace.Guard {
	ctx, cancel := context.WithCancel(context.Background())
	g := etcdspace.New(c, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx, 50*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

// TestRewritesThatFillTheQuotaAreReclaimed: one key rewritten until etcd
// is out of space, as a student's replace loop did. Every write was then
// refused until someone disarmed the alarm by hand; the Guard frees the
// history and disarms it, and writes work again.
func TestRewritesThatFillTheQuotaAreReclaimed(t *testing.T) {
	m := storagetest.StartEtcdWith(t, embedetcd.Config{QuotaBackendBytes: quota})
	c := m.Client()
	writes := fill(t, c, func(int) string { return "/registry/configmaps/alice/big" })
	if _, err := c.Put(context.Background(), "/registry/configmaps/bob/small", "hi"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("another's write while out of space: %v, want NOSPACE", err)
	}
	g := startGuard(t, c)
	eventually.Holds(t, "the alarm disarmed and a write accepted", func() (bool, error) {
		_, err := c.Put(context.Background(), "/registry/configmaps/bob/small", "hi")
		return err == nil && noSpaceAlarms(t, c) == 0, nil
	})
	eventually.Holds(t, "the guard's state says so", func() (bool, error) {
		s := g.State()
		return !s.Full && s.Recoveries == 1 && !s.LiveDataFills, nil
	})
	s := g.State()
	t.Logf("%d rewrites of 256 KiB filled an 8 MiB quota; after the guard: %d of %d bytes in use, recovered in %v",
		writes, s.InUse, s.Quota, s.LastRecovery.Round(time.Millisecond))
	if s.InUse > quota/4 || s.Quota != quota {
		t.Errorf("after compaction and defragmentation: %d of %d bytes in use, want at most a quarter of %d", s.InUse, s.Quota, quota)
	}
	if got, err := c.Get(context.Background(), "/registry/configmaps/alice/big"); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != value {
		t.Errorf("the rewritten key after recovery: %v, %v; want its last value", got, err)
	}
}

// TestLiveDataThatFillsTheQuotaIsReported: distinct keys fill the quota,
// so compaction frees nothing and the alarm stays, with the guard saying
// why; once some are deleted (etcd allows deletes while out of space),
// it disarms the alarm.
func TestLiveDataThatFillsTheQuotaIsReported(t *testing.T) {
	m := storagetest.StartEtcdWith(t, embedetcd.Config{QuotaBackendBytes: quota})
	c := m.Client()
	g := startGuard(t, c)
	// etcd counts its file, free pages and all, against the quota: the
	// first alarm can come with less live data than a defragmented file
	// needs to stay full. Then the guard rightly disarms it, and more is
	// written.
	written := 0
	eventually.Holds(t, "the guard reports live data filling the quota", func() (bool, error) {
		if s := g.State(); s.Full && s.LiveDataFills && s.Since != nil && s.InUse > 0 {
			return true, nil
		}
		written += fill(t, c, func(i int) string { return fmt.Sprintf("/registry/configmaps/alice/big-%05d", written+i) })
		return false, nil
	})
	if _, err := c.Put(context.Background(), "/registry/configmaps/bob/small", "hi"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("a write with live data filling the quota: %v, want NOSPACE still", err)
	}
	if n := noSpaceAlarms(t, c); n != 1 {
		t.Fatalf("%d NOSPACE alarms, want the one still raised", n)
	}
	// More than one if an early alarm was disarmed on the way (above).
	recoveries := g.State().Recoveries
	if _, err := c.Delete(context.Background(), "/registry/configmaps/alice/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("deleting while out of space: %v", err)
	}
	eventually.Holds(t, "the alarm disarmed once the data is deleted", func() (bool, error) {
		_, err := c.Put(context.Background(), "/registry/configmaps/bob/small", "hi")
		return err == nil && noSpaceAlarms(t, c) == 0, nil
	})
	s := g.State()
	t.Logf("%d keys of 256 KiB filled an 8 MiB quota; deleted, then %d bytes in use", written, s.InUse)
	if s.Full || s.LiveDataFills || s.Recoveries != recoveries+1 {
		t.Errorf("the guard's state after recovery: %+v, want %d recoveries", s, recoveries+1)
	}
}

// TestNoAlarmNoWork: with room to spare the guard compacts nothing: the
// history a watch may resume from stays.
func TestNoAlarmNoWork(t *testing.T) {
	m := storagetest.StartEtcd(t)
	c := m.Client()
	first, err := c.Put(context.Background(), "/registry/configmaps/alice/a", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(context.Background(), "/registry/configmaps/alice/a", "2"); err != nil {
		t.Fatal(err)
	}
	g := etcdspace.New(c, slog.New(slog.DiscardHandler))
	if err := g.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := g.State(); s.Full || s.Recoveries != 0 {
		t.Errorf("state with room: %+v", s)
	}
	if _, err := c.Get(context.Background(), "/registry/configmaps/alice/a", clientv3.WithRev(first.Header.Revision)); err != nil {
		t.Errorf("the history after a check with room: %v", err)
	}
}
