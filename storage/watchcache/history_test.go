package watchcache

import (
	"fmt"
	"testing"
	"time"
)

func revs(events []*event) string {
	var out []int64
	for _, e := range events {
		out = append(out, e.rev)
	}
	return fmt.Sprint(out)
}

// fill pushes events rev from..to, one every step after t0.
func fill(h *history, from, to int64, t0 time.Time, step time.Duration) time.Time {
	at := t0
	for rev := from; rev <= to; rev++ {
		h.push(&event{rev: rev, recorded: at})
		at = at.Add(step)
	}
	return at
}

func TestHistoryKeepsAtLeast100(t *testing.T) {
	h := newHistory()
	t0 := time.Unix(0, 0)
	// One event every 10 s: the ring is never young enough to grow.
	fill(h, 1, 150, t0, 10*time.Second)
	if h.capacity() != historyMinCapacity || h.n != 100 || !h.trimmed {
		t.Fatalf("capacity %d, %d events, trimmed %v; want 100, 100, true", h.capacity(), h.n, h.trimmed)
	}
	if got := h.oldest().rev; got != 51 {
		t.Fatalf("oldest kept %d, want 51", got)
	}
	if got := revs(h.since(148)); got != "[149 150]" {
		t.Fatalf("since(148) = %s", got)
	}
}

// TestHistoryGrowsWhileYoung: kube doubles a full ring whose oldest event
// is younger than 75 s, so a burst loses nothing, up to 102,400 events.
func TestHistoryGrowsWhileYoung(t *testing.T) {
	h := newHistory()
	fill(h, 1, 1000, time.Unix(0, 0), time.Millisecond)
	if h.capacity() != 1600 || h.n != 1000 || h.trimmed {
		t.Fatalf("capacity %d, %d events, trimmed %v; want 1600, 1000, false", h.capacity(), h.n, h.trimmed)
	}
	if got := revs(h.since(997)); got != "[998 999 1000]" {
		t.Fatalf("since(997) = %s", got)
	}
	h = newHistory()
	fill(h, 1, historyMaxCapacity+10, time.Unix(0, 0), time.Microsecond)
	if h.capacity() != historyMaxCapacity || h.oldest().rev != 11 {
		t.Fatalf("capacity %d, oldest %d; want %d, 11", h.capacity(), h.oldest().rev, historyMaxCapacity)
	}
}

// TestHistoryShrinksWhenStale: once even the newest quarter is older than
// 75 s, a full ring halves, keeping its newest events, down to 100.
func TestHistoryShrinksWhenStale(t *testing.T) {
	h := newHistory()
	at := fill(h, 1, 400, time.Unix(0, 0), time.Millisecond) // grows to 400
	if h.capacity() != 400 {
		t.Fatalf("capacity %d, want 400", h.capacity())
	}
	fill(h, 401, 401, at.Add(2*time.Minute), 0)
	if h.capacity() != 200 || h.oldest().rev != 202 {
		t.Fatalf("capacity %d, oldest %d; want 200, 202", h.capacity(), h.oldest().rev)
	}
	h.reset()
	if h.n != 0 || h.trimmed || h.capacity() != 200 {
		t.Fatalf("after reset: %d events, trimmed %v, capacity %d", h.n, h.trimmed, h.capacity())
	}
}
