package watchcache

import (
	"testing"
	"time"
)

// TestDropWait: a paused watcher at rv can be pushed out of the window
// only once the events kept at or before rv are older than kube's 75 s;
// then changes move the window past it, and a watch from rv is too old.
func TestDropWait(t *testing.T) {
	c := &Cache{history: newHistory(), listStart: 10}
	t0 := time.Unix(1000, 0)
	if got, made := c.DropWait(10, t0); got != eventFreshDuration || made {
		t.Fatalf("empty window: wait %v (made %v), want %v for a change still to make", got, made, eventFreshDuration)
	}
	// Events 11..60, one a second; the watcher paused at 40, so event 41,
	// at +30 s, is the first it missed.
	end := fill(c.history, 11, 60, t0, time.Second)
	if got, made := c.DropWait(60, end); got != eventFreshDuration || made {
		t.Fatalf("nothing missed after 60: wait %v (made %v), want a change to make first", got, made)
	}
	if got, want := mustWait(t, c, 40, end), eventFreshDuration-end.Sub(t0.Add(30*time.Second)); got != want {
		t.Fatalf("wait for rv 40 at +%v: %v, want %v (event 41 arrived at +30 s)", end.Sub(t0), got, want)
	}
	later := t0.Add(30*time.Second + eventFreshDuration)
	if got := mustWait(t, c, 40, later); got != 0 {
		t.Fatalf("wait once event 41 is 75 s old: %v", got)
	}
	// 100 new events then fill the ring and drop the old ones up to event
	// 41: the window starts past 40, and a watch from 40 would be too old.
	// (Event 42 is younger than 75 s, so from there the window grows.)
	fill(c.history, 61, 160, later, time.Millisecond)
	if w := c.Window(); w.Start <= 40 {
		t.Fatalf("after 100 changes: %+v, want a window starting past 40", w)
	}
	if got := mustWait(t, c, 40, later); got != 0 {
		t.Fatalf("already past: wait %v", got)
	}
	// Without the wait, the same changes grow the window instead.
	young := &Cache{history: newHistory(), listStart: 10}
	end = fill(young.history, 11, 60, t0, time.Second)
	fill(young.history, 61, 160, end, time.Millisecond)
	if w := young.Window(); w.Start != 10 || w.Capacity != 200 {
		t.Fatalf("young events: %+v, want the window to grow and keep starting at 10", w)
	}
}

func mustWait(t *testing.T, c *Cache, rv int64, now time.Time) time.Duration {
	t.Helper()
	wait, made := c.DropWait(rv, now)
	if !made {
		t.Fatalf("DropWait(%d): no change after it is kept", rv)
	}
	return wait
}
