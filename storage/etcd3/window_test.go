package etcd3_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// fakeClock is the time the watch cache records events at.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestWindowIsKubesHistory: more than 100 events within 75 s all stay
// watchable (the history grows); once its events are older than 75 s it
// shrinks, and a watch from before its oldest event gets kube's 410 with
// Y = the oldest event kept, minus one.
func TestWindowIsKubesHistory(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	s := newPodStore(t, storagetest.StartEtcd(t).Client(), func(c *etcd3.Config) { c.Cache.Now = clock.Now })
	listRev := windowStart(t, s)
	var pods []string // resourceVersions, in order
	create := func(n int) {
		for range n {
			p := mustCreate(t, s, newPod("ns", fmt.Sprintf("p%d", len(pods)), nil))
			pods = append(pods, p.ResourceVersion)
		}
	}
	create(200)
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(listRev)})
	if got, want := describe(next(t, w)), "ADDED p0 "+pods[0]; got != want {
		t.Fatalf("200 events within 75 s: watch from the list got %q, want %q", got, want)
	}
	w.Stop()
	// The capacity grows as the cache records the events, which it may
	// not all have done when the first one was watched.
	waitFor(t, "the cache to record the 200th event", func() bool { return fmt.Sprint(s.Cache().ResourceVersion()) == pods[199] })
	if c := s.Cache().HistoryCapacity(); c != 200 {
		t.Fatalf("capacity %d after 200 fresh events, want 200", c)
	}

	clock.Advance(2 * time.Minute)
	create(1)
	waitFor(t, "the cache to record the last event", func() bool { return fmt.Sprint(s.Cache().ResourceVersion()) == pods[200] })
	// Halved to the newest 100 (p100..p199), then p100 made room for p200.
	if c := s.Cache().HistoryCapacity(); c != 100 {
		t.Fatalf("capacity %d after the events went stale, want 100", c)
	}
	oldest := pods[100] // p101's revision minus one
	expectGone(t, mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(listRev)}),
		fmt.Sprintf("too old resource version: %d (%s)", listRev, oldest))
	w = mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: oldest})
	if got, want := describe(next(t, w)), "ADDED p101 "+pods[101]; got != want {
		t.Fatalf("watch from the window's start got %q, want %q", got, want)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
