package watchcache

import (
	"fmt"
	"testing"
)

func revs(events []*event) string {
	var out []int64
	for _, e := range events {
		out = append(out, e.rev)
	}
	return fmt.Sprint(out)
}

func TestHistoryRing(t *testing.T) {
	h := newHistory(3)
	for rev := int64(1); rev <= 3; rev++ {
		if ev := h.push(&event{rev: rev}); ev != nil {
			t.Fatalf("evicted %d before full", ev.rev)
		}
	}
	if ev := h.push(&event{rev: 4}); ev == nil || ev.rev != 1 {
		t.Fatalf("evicted %v, want rev 1", ev)
	}
	for _, tc := range []struct {
		since int64
		want  string
	}{{0, "[2 3 4]"}, {2, "[3 4]"}, {4, "[]"}, {9, "[]"}} {
		if got := revs(h.since(tc.since)); got != tc.want {
			t.Errorf("since(%d) = %s, want %s", tc.since, got, tc.want)
		}
	}
	h.dropThrough(3)
	if got := revs(h.since(0)); got != "[4]" {
		t.Fatalf("after dropThrough(3): %s", got)
	}
	h.push(&event{rev: 5})
	h.push(&event{rev: 6})
	if got := revs(h.since(0)); got != "[4 5 6]" {
		t.Fatalf("wrapped: %s", got)
	}
	h.reset()
	if got := revs(h.since(0)); got != "[]" {
		t.Fatalf("after reset: %s", got)
	}
}
