package trace_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/trace"
)

func tr(user string, i int) pipeline.Trace {
	return pipeline.Trace{ID: fmt.Sprintf("%s-%d", user, i), User: user, Verb: "get", Code: 200}
}

func receive(t *testing.T, ch <-chan pipeline.Trace) pipeline.Trace {
	t.Helper()
	select {
	case got, ok := <-ch:
		if !ok {
			t.Fatal("channel closed, want a trace")
		}
		return got
	case <-time.After(5 * time.Second):
		t.Fatal("no trace within 5s")
	}
	return pipeline.Trace{}
}

func TestSubscribeFiltersAndClosesWithContext(t *testing.T) {
	bus := trace.NewBus(trace.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	alice := bus.Subscribe(ctx, func(t pipeline.Trace) bool { return t.User == "alice" }, 10)
	all := bus.Subscribe(ctx, nil, 10)
	bus.Publish(tr("bob", 1))
	bus.Publish(tr("alice", 1))
	if got := receive(t, alice); got.ID != "alice-1" {
		t.Fatalf("alice's subscriber got %s", got.ID)
	}
	if a, b := receive(t, all), receive(t, all); a.ID != "bob-1" || b.ID != "alice-1" {
		t.Fatalf("unfiltered subscriber got %s, %s", a.ID, b.ID)
	}
	cancel()
	for _, ch := range []<-chan pipeline.Trace{alice, all} {
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatal("a trace after cancel")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("channel not closed after cancel")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for bus.Subscribers() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := bus.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers left after cancel", n)
	}
	bus.Publish(tr("alice", 2)) // no subscriber: must not panic on a closed channel
}

// TestStalledSubscriberNeverBlocksPublish is the promise that a browser
// tab that stopped reading cannot slow requests down.
func TestStalledSubscriberNeverBlocksPublish(t *testing.T) {
	bus := trace.NewBus(trace.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = bus.Subscribe(ctx, nil, 1) // never read
	fast := bus.Subscribe(ctx, nil, 10000)
	const n = 5000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			bus.Publish(tr("alice", i))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked behind a stalled subscriber")
	}
	if got := bus.Dropped(); got != n-1 {
		t.Fatalf("dropped %d, want %d (all but the one buffered)", got, n-1)
	}
	for i := range n {
		if got := receive(t, fast); got.ID != fmt.Sprintf("alice-%d", i) {
			t.Fatalf("fast subscriber got %s at %d", got.ID, i)
		}
	}
}

func TestRecentKeepsTheLast200PerUser(t *testing.T) {
	bus := trace.NewBus(trace.Config{})
	for i := range 250 {
		bus.Publish(tr("alice", i))
		if i%2 == 0 {
			bus.Publish(tr("bob", i))
		}
	}
	for _, tc := range []struct {
		name        string
		user        string
		n           int
		wantLen     int
		first, last string
	}{
		{"OK/all kept", "alice", 1000, 200, "alice-50", "alice-249"},
		{"OK/newest few", "alice", 3, 3, "alice-247", "alice-249"},
		{"OK/fewer than cap", "bob", 500, 125, "bob-0", "bob-248"},
		{"OK/unknown user", "carol", 10, 0, "", ""},
		{"OK/zero asked", "alice", 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bus.Recent(tc.user, tc.n)
			if len(got) != tc.wantLen {
				t.Fatalf("got %d traces, want %d", len(got), tc.wantLen)
			}
			if tc.wantLen > 0 && (got[0].ID != tc.first || got[len(got)-1].ID != tc.last) {
				t.Fatalf("got %s..%s, want %s..%s", got[0].ID, got[len(got)-1].ID, tc.first, tc.last)
			}
		})
	}
}

func TestRecentForgetsTheLeastRecentUser(t *testing.T) {
	bus := trace.NewBus(trace.Config{PerUser: 5, MaxUsers: 3})
	bus.Publish(tr("a", 0))
	bus.Publish(tr("b", 0))
	bus.Publish(tr("c", 0))
	bus.Publish(tr("a", 1)) // a is now more recent than b
	bus.Publish(tr("d", 0)) // evicts b
	if got := bus.Recent("b", 10); len(got) != 0 {
		t.Fatalf("b kept %d traces after eviction", len(got))
	}
	for _, u := range []string{"a", "c", "d"} {
		if len(bus.Recent(u, 10)) == 0 {
			t.Fatalf("%s was evicted", u)
		}
	}
}

// TestConcurrentPublishSubscribe is for -race: publishers, subscribers
// coming and going, and readers of Recent all at once.
func TestConcurrentPublishSubscribe(t *testing.T) {
	bus := trace.NewBus(trace.Config{PerUser: 50})
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				bus.Publish(tr(fmt.Sprintf("u%d", i%7), p*10000+i))
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				ctx, cancel := context.WithCancel(context.Background())
				ch := bus.Subscribe(ctx, func(t pipeline.Trace) bool { return t.User == "u3" }, 4)
				for range 2 {
					select {
					case <-ch:
					case <-time.After(time.Millisecond):
					}
				}
				cancel()
			}
		})
	}
	wg.Go(func() {
		for range 500 {
			for _, t := range bus.Recent("u1", 50) {
				_ = t.ID
			}
		}
	})
	wg.Wait()
	if got := len(bus.Recent("u0", 1000)); got != 50 {
		t.Fatalf("u0 kept %d traces, want 50", got)
	}
}

func BenchmarkPublish(b *testing.B) {
	bus := trace.NewBus(trace.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 10 {
		_ = bus.Subscribe(ctx, func(t pipeline.Trace) bool { return t.User == "nobody" }, 1)
	}
	t := tr("alice", 0)
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(t)
	}
}
