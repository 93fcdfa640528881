package watchcache

import (
	"sort"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
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
	// cur is the object after the change; for DELETED, the last state with
	// its resourceVersion set to the deletion's revision.
	cur *state
	// prev is the object before the change (nil for ADDED): a watcher whose
	// selector matched prev but not cur sees the object leave as a DELETED.
	prev *state
	// prevAtRev is prev with its resourceVersion moved to rev, made on first need.
	prevAtRev runtime.Object
}

// history is a ring of the most recent events, oldest first, so that a
// watcher can resume from any resourceVersion still inside it.
type history struct {
	buf   []*event
	start int // index of the oldest event
	n     int
}

func newHistory(capacity int) *history { return &history{buf: make([]*event, capacity)} }

// push appends e and returns the event it evicted, if the ring was full.
func (h *history) push(e *event) (evicted *event) {
	if len(h.buf) == 0 {
		return e
	}
	if h.n == len(h.buf) {
		evicted = h.buf[h.start]
		h.buf[h.start] = e
		h.start = (h.start + 1) % len(h.buf)
		return evicted
	}
	h.buf[(h.start+h.n)%len(h.buf)] = e
	h.n++
	return nil
}

func (h *history) at(i int) *event { return h.buf[(h.start+i)%len(h.buf)] }

// since returns the events with a revision greater than rev, oldest first.
func (h *history) since(rev int64) []*event {
	i := sort.Search(h.n, func(i int) bool { return h.at(i).rev > rev })
	out := make([]*event, 0, h.n-i)
	for ; i < h.n; i++ {
		out = append(out, h.at(i))
	}
	return out
}

// dropThrough forgets every event at or below rev.
func (h *history) dropThrough(rev int64) {
	for h.n > 0 && h.at(0).rev <= rev {
		h.buf[h.start] = nil
		h.start = (h.start + 1) % len(h.buf)
		h.n--
	}
}

func (h *history) reset() {
	clear(h.buf)
	h.start, h.n = 0, 0
}
