package watchcache

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// kube-apiserver's bounds for a watch cache's history
// (k8s.io/apiserver/pkg/storage/cacher/watch_cache_history.go): it never
// keeps fewer than 100 events, doubles while every event it holds is
// younger than eventFreshDuration, up to 102,400, and halves once the
// newest quarter of it is older than that.
const (
	historyMinCapacity = 100
	historyMaxCapacity = 100 * 1024
	// eventFreshDuration is kube's DefaultEventFreshDuration: the bookmark
	// frequency (1 min) plus 15 s, so that a watcher that gets a bookmark
	// every minute can always resume from it.
	eventFreshDuration = 75 * time.Second
)

// state is one version of one object, with what selectors match on.
type state struct {
	obj    runtime.Object
	labels labels.Set
	fields fields.Set
}

// event is one change to one key, as etcd reported it at revision rev.
type event struct {
	typ watch.EventType
	key string
	rev int64
	// recorded is when the cache received the event; the history's size
	// follows how old its events are.
	recorded time.Time
	// cur is the object after the change; for DELETED, the last state with
	// its resourceVersion set to the deletion's revision.
	cur *state
	// prev is the object before the change (nil for ADDED): a watcher whose
	// selector matched prev but not cur sees the object leave as a DELETED.
	prev *state
	// prevAtRev is prev with its resourceVersion moved to rev, made on first need.
	prevAtRev runtime.Object
}

// history is a ring of the most recent events, oldest first, sized as
// kube-apiserver sizes its own, so that a watcher can resume from any
// resourceVersion inside the same window as on a real cluster.
type history struct {
	buf   []*event
	start int // index of the oldest event
	n     int
	// trimmed is set once an event has been dropped since the last reset:
	// from then on the window starts at the oldest event kept, not at the
	// revision the cache listed at.
	trimmed bool
	// fresh is kube's eventFreshDuration (75 s) unless a test shortens it.
	fresh time.Duration
}

func newHistory() *history {
	return &history{buf: make([]*event, historyMinCapacity), fresh: eventFreshDuration}
}

// capacity is how many events the ring holds before it drops the oldest.
func (h *history) capacity() int { return len(h.buf) }

// push appends e, first resizing the ring as kube does at e's time, and
// dropping the oldest event if the ring is still full.
func (h *history) push(e *event) {
	h.resize(e.recorded)
	if h.n == len(h.buf) {
		h.buf[h.start] = nil
		h.start = (h.start + 1) % len(h.buf)
		h.n--
		h.trimmed = true
	}
	h.buf[(h.start+h.n)%len(h.buf)] = e
	h.n++
}

// resize follows kube's resizeCacheLocked: only a full ring changes size;
// it doubles if its oldest event is younger than eventFreshDuration, and
// halves if even the event a quarter from its newest end is older.
func (h *history) resize(now time.Time) {
	c := len(h.buf)
	if h.n < c {
		return
	}
	switch {
	case now.Sub(h.at(0).recorded) < h.fresh:
		if grown := min(2*c, historyMaxCapacity); grown > c {
			h.setCapacity(grown)
		}
	case now.Sub(h.at(h.n-c/4).recorded) > h.fresh:
		if shrunk := max(c/2, historyMinCapacity); shrunk < c {
			h.setCapacity(shrunk)
		}
	}
}

// setCapacity copies the ring into one of the given size, keeping the
// newest events (a shrink drops the oldest, as kube's does).
func (h *history) setCapacity(c int) {
	keep := min(h.n, c)
	if keep < h.n {
		h.trimmed = true
	}
	buf := make([]*event, c)
	for i := range keep {
		buf[i] = h.at(h.n - keep + i)
	}
	h.buf, h.start, h.n = buf, 0, keep
}

func (h *history) at(i int) *event { return h.buf[(h.start+i)%len(h.buf)] }

// oldest is the oldest event kept, or nil.
func (h *history) oldest() *event {
	if h.n == 0 {
		return nil
	}
	return h.at(0)
}

// full reports whether the ring holds as many events as it can.
func (h *history) full() bool { return h.n == len(h.buf) }

// firstAtOrAfter is the oldest event kept at revision rev or later, or nil.
func (h *history) firstAtOrAfter(rev int64) *event {
	i := sort.Search(h.n, func(i int) bool { return h.at(i).rev >= rev })
	if i == h.n {
		return nil
	}
	return h.at(i)
}

// since returns the events with a revision greater than rev, oldest first.
func (h *history) since(rev int64) []*event {
	i := sort.Search(h.n, func(i int) bool { return h.at(i).rev > rev })
	out := make([]*event, 0, h.n-i)
	for ; i < h.n; i++ {
		out = append(out, h.at(i))
	}
	return out
}

// reset empties the ring for a new list; its capacity stays, as kube's does.
func (h *history) reset() {
	clear(h.buf)
	h.start, h.n, h.trimmed = 0, 0, false
}
