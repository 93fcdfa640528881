// Package trace carries finished request traces from the pipeline to
// whoever watches them (the browser's pipeline view) and keeps the last
// few per user. Publishing never waits for a reader: a request must not
// be slowed by a browser tab that stopped reading.
package trace

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/kubelab/kubelab/pipeline"
)

// Defaults for NewBus.
const (
	// DefaultPerUser is how many recent traces each user keeps.
	DefaultPerUser = 200
	// DefaultMaxUsers bounds how many users' recent traces are kept; the
	// user who published least recently is forgotten first.
	DefaultMaxUsers = 5000
	// DefaultBuffer is a subscriber's buffer when Subscribe is given none.
	DefaultBuffer = 256
)

// Config tunes a Bus; zero fields take the defaults.
type Config struct {
	PerUser  int
	MaxUsers int
}

// Bus is an in-process publish/subscribe of finished traces. Traces are
// shared by every subscriber and must not be modified.
type Bus struct {
	perUser, maxUsers int

	subMu sync.RWMutex
	subs  map[*subscriber]struct{}

	recentMu sync.Mutex
	recent   map[string]*ring
	seq      uint64 // orders users by their last publish, for eviction

	dropped atomic.Uint64
}

type subscriber struct {
	ch      chan pipeline.Trace
	filter  func(pipeline.Trace) bool
	dropped atomic.Uint64
}

var _ pipeline.Publisher = (*Bus)(nil)

// NewBus returns an empty bus.
func NewBus(cfg Config) *Bus {
	if cfg.PerUser <= 0 {
		cfg.PerUser = DefaultPerUser
	}
	if cfg.MaxUsers <= 0 {
		cfg.MaxUsers = DefaultMaxUsers
	}
	return &Bus{perUser: cfg.PerUser, maxUsers: cfg.MaxUsers,
		subs: map[*subscriber]struct{}{}, recent: map[string]*ring{}}
}

// Publish hands t to every subscriber whose filter accepts it and keeps it
// among its user's recent traces. It never blocks: a subscriber whose
// buffer is full misses t, and the miss is counted.
func (b *Bus) Publish(t pipeline.Trace) {
	b.remember(t)
	b.subMu.RLock()
	defer b.subMu.RUnlock()
	for s := range b.subs {
		if s.filter != nil && !s.filter(t) {
			continue
		}
		select {
		case s.ch <- t:
		default:
			s.dropped.Add(1)
			b.dropped.Add(1)
		}
	}
}

// Subscribe returns a channel of the traces filter accepts (all, if filter
// is nil) published from now on, until ctx ends, when the channel is
// closed. buffer is how many traces may wait for the reader (DefaultBuffer
// if <= 0); beyond that, traces are dropped for this subscriber only.
// The filter runs on the publisher's goroutine and must be quick.
func (b *Bus) Subscribe(ctx context.Context, filter func(pipeline.Trace) bool, buffer int) <-chan pipeline.Trace {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	s := &subscriber{ch: make(chan pipeline.Trace, buffer), filter: filter}
	b.subMu.Lock()
	b.subs[s] = struct{}{}
	b.subMu.Unlock()
	go func() {
		<-ctx.Done()
		// Publish sends under the read lock, so once this write lock is
		// held no send is in flight and closing is safe.
		b.subMu.Lock()
		delete(b.subs, s)
		close(s.ch)
		b.subMu.Unlock()
	}()
	return s.ch
}

// Dropped counts the traces subscribers missed because they were slow.
func (b *Bus) Dropped() uint64 { return b.dropped.Load() }

// Subscribers is how many subscriptions are open.
func (b *Bus) Subscribers() int {
	b.subMu.RLock()
	defer b.subMu.RUnlock()
	return len(b.subs)
}

// Recent returns up to n of user's most recent traces, oldest first.
func (b *Bus) Recent(user string, n int) []pipeline.Trace {
	b.recentMu.Lock()
	defer b.recentMu.Unlock()
	r, ok := b.recent[user]
	if !ok || n <= 0 {
		return nil
	}
	return r.last(n)
}

func (b *Bus) remember(t pipeline.Trace) {
	b.recentMu.Lock()
	defer b.recentMu.Unlock()
	b.seq++
	r, ok := b.recent[t.User]
	if !ok {
		if len(b.recent) >= b.maxUsers {
			b.evictLocked()
		}
		r = &ring{buf: make([]pipeline.Trace, 0, min(b.perUser, 16)), size: b.perUser}
		b.recent[t.User] = r
	}
	r.add(t)
	r.seq = b.seq
}

// evictLocked forgets the user who published least recently. It is a scan,
// but it runs only when a new user arrives at a full table.
func (b *Bus) evictLocked() {
	var oldest string
	var oldestSeq uint64
	first := true
	for u, r := range b.recent {
		if first || r.seq < oldestSeq {
			oldest, oldestSeq, first = u, r.seq, false
		}
	}
	delete(b.recent, oldest)
}

// ring keeps the last size traces of one user.
type ring struct {
	buf  []pipeline.Trace
	next int // where the next trace goes once buf is full
	size int
	seq  uint64
}

func (r *ring) add(t pipeline.Trace) {
	if len(r.buf) < r.size {
		r.buf = append(r.buf, t)
		return
	}
	r.buf[r.next] = t
	r.next = (r.next + 1) % r.size
}

// last returns the newest n traces, oldest first, in a new slice.
func (r *ring) last(n int) []pipeline.Trace {
	n = min(n, len(r.buf))
	out := make([]pipeline.Trace, 0, n)
	start := len(r.buf) - n // index, in age order, of the first trace returned
	for i := start; i < len(r.buf); i++ {
		out = append(out, r.buf[(r.next+i)%len(r.buf)])
	}
	return out
}
