// Package watchcache keeps one etcd watch per resource and fans its events
// out to every API watcher, the way kube-apiserver's cacher does: the
// current objects (for the synthetic ADDED events of a fresh watch), a
// window of recent events (to resume from a resourceVersion), BOOKMARKs,
// and 410 Gone for a resourceVersion that is no longer servable.
package watchcache

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
)

// Config describes the resource a Cache follows.
type Config struct {
	Client   *clientv3.Client
	Resource schema.GroupResource
	// Prefix is the resource's etcd prefix without a trailing slash, e.g. "/registry/pods".
	Prefix string
	// Decode turns an etcd value into an object whose resourceVersion is rev.
	Decode func(value []byte, rev int64) (runtime.Object, error)
	// NewFunc returns an empty object of the resource's kind, for BOOKMARKs.
	NewFunc func() runtime.Object
	Attrs   storage.AttrFunc
	// ReplayEtcdHistory, beyond what kube-apiserver does, fills the window
	// at start with the events etcd still holds, so that a watch from
	// before a restart resumes instead of getting 410 Gone. Off, the
	// window starts at the revision the cache listed at, as kube's does.
	ReplayEtcdHistory bool
	// Now is the clock events are recorded with (time.Now if nil): the
	// history's size follows how old its events are.
	Now func() time.Time
	// WatcherBuffer is how many events may wait for a slow watcher before it is closed.
	WatcherBuffer int
	// BookmarkFrequency is how often a watcher that allows bookmarks gets one.
	BookmarkFrequency time.Duration
	// EventFreshDuration is how young the oldest event must be for a full
	// history to grow rather than drop it: kube's 75 s when zero. Only
	// tests shorten it, to see the window move without waiting.
	EventFreshDuration time.Duration
	Logger             *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.WatcherBuffer == 0 {
		c.WatcherBuffer = 100
	}
	if c.BookmarkFrequency == 0 {
		c.BookmarkFrequency = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Cache follows one resource in etcd and serves watches from memory.
type Cache struct {
	cfg Config

	mu      sync.Mutex
	objects map[string]*state
	history *history
	// listStart is where the window began: the revision of the last list
	// (or, when replaying etcd's history, the revision the replay began
	// after). Until the history drops an event, a watch may resume from
	// any resourceVersion at or after it; see windowStartLocked.
	listStart int64
	// rv is the revision the cache is current to.
	rv int64
	// fresher is closed, and replaced, whenever rv advances.
	fresher  chan struct{}
	watchers map[uint64]*watcher
	nextID   uint64
	// listRev is the revision of the last full list; until the cache has
	// replayed etcd's history up to it (caughtUp), it serves no watch.
	listRev int64
	listed  bool
	// snapshotFloor and compactRev bound the revisions an exact list can
	// be served at (snapshotAtLocked): the list's revision, raised to the
	// oldest event kept whenever the history is full after an event (as
	// kube drops its snapshots below it), and what kube's compactor last
	// compacted at (Compact).
	snapshotFloor int64
	compactRev    int64
	caughtUp      bool
	ready         chan struct{}
	stopped       bool
	// initialized is set the first time the cache catches up, and stays
	// set through later relists: kube's storage-readiness check.
	initialized atomic.Bool

	progressMu  sync.Mutex
	progressCtx context.Context // the etcd watch's context, for RequestProgress

	// stalled counts watchers closed because they could not keep up.
	stalled atomic.Uint64

	cancel context.CancelFunc
	done   chan struct{}
}

// Initialized reports whether the cache has read its resource from etcd
// and caught up at least once since it started.
func (c *Cache) Initialized() bool { return c.initialized.Load() }

// Stats are the cache's figures for monitoring.
type Stats struct {
	// Watchers open now.
	Watchers int
	// Stalled is how many watchers were closed for not keeping up.
	Stalled uint64
}

// Stats reports the open watchers and the stalled ones closed so far.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	n := len(c.watchers)
	c.mu.Unlock()
	return Stats{Watchers: n, Stalled: c.stalled.Load()}
}

// New starts a cache; it serves watches once it has listed the resource.
func New(cfg Config) *Cache {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		cfg:      cfg,
		objects:  map[string]*state{},
		history:  newHistory(),
		fresher:  make(chan struct{}),
		watchers: map[uint64]*watcher{},
		ready:    make(chan struct{}),
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	if cfg.EventFreshDuration > 0 {
		c.history.fresh = cfg.EventFreshDuration
	}
	go c.run(ctx)
	return c
}

// Stop ends the etcd watch and closes every watcher's result channel;
// a watch asked for afterwards is refused, so a client that reconnects at
// once cannot hold a stopping server open.
func (c *Cache) Stop() {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for _, w := range c.watchers {
		c.removeLocked(w)
	}
}

// CloseWatchers ends every current watch, as a restarting API server
// would; clients resume from the last resourceVersion they saw.
func (c *Cache) CloseWatchers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.watchers {
		c.removeLocked(w)
	}
}

// ResourceVersion is the revision the cache is current to.
func (c *Cache) ResourceVersion() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rv
}

// OldestResourceVersion is the oldest resourceVersion a watch can still
// resume from: the Y of "too old resource version: X (Y)".
func (c *Cache) OldestResourceVersion() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.windowStartLocked()
}

// HistoryCapacity is how many events the window holds now (100 to 102,400).
func (c *Cache) HistoryCapacity() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.history.capacity()
}

// windowStartLocked follows kube's GetIntervalLocked: while no event has
// been dropped since the list, the window starts at the list's revision;
// after that, just before the oldest event kept. etcd's compaction does
// not move it: the cache keeps its own history, as kube-apiserver's does.
func (c *Cache) windowStartLocked() int64 {
	if oldest := c.history.oldest(); c.history.trimmed && oldest != nil {
		return oldest.rev - 1
	}
	return c.listStart
}

func (c *Cache) run(ctx context.Context) {
	defer close(c.done)
	go c.sendBookmarks(ctx)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		c.cfg.Logger.Warn("watch cache lost its etcd watch; resuming", "resource", c.cfg.Resource.String(), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// apply records one etcd watch response: history, current objects, the
// cache's revision, and every watcher's queue.
func (c *Cache) apply(resp clientv3.WatchResponse) {
	if resp.IsProgressNotify() {
		c.mu.Lock()
		c.advanceLocked(resp.Header.Revision)
		c.mu.Unlock()
		return
	}
	for _, ev := range resp.Events {
		e, err := c.toEvent(ev)
		c.mu.Lock()
		if err == nil {
			err = c.completeLocked(e, ev)
		}
		if err != nil {
			c.logCorrupt(string(ev.Kv.Key), err)
		} else {
			c.recordLocked(e)
		}
		c.advanceLocked(ev.Kv.ModRevision)
		c.mu.Unlock()
	}
}

func (c *Cache) recordLocked(e *event) {
	e.recorded = c.cfg.Now()
	c.history.push(e)
	if c.history.full() {
		c.snapshotFloor = max(c.snapshotFloor, c.history.oldest().rev)
	}
	// A replayed event (at or before the list) is already in the objects.
	if e.rev > c.listRev {
		if e.typ == watch.Deleted {
			delete(c.objects, e.key)
		} else {
			c.objects[e.key] = e.cur
		}
	}
	// Watchers get what their start did not cover: normally every event
	// recorded after they registered, and, should one register while
	// etcd's history is still being replayed, the rest of the replay.
	for _, w := range c.watchers {
		if e.rev > w.seen {
			c.dispatchLocked(w, e)
		}
	}
}

// advanceLocked moves the cache's clock; the cache is caught up once it
// reaches the revision of its last list.
func (c *Cache) advanceLocked(rev int64) {
	if !c.caughtUp && c.listed && rev >= c.listRev {
		c.caughtUp = true
		c.initialized.Store(true)
		close(c.ready)
	}
	c.setRVLocked(rev)
}

func (c *Cache) setRVLocked(rev int64) {
	if rev > c.rv {
		c.rv = rev
		close(c.fresher)
		c.fresher = make(chan struct{})
	}
}

// toEvent decodes what an etcd event carries; completeLocked adds what
// the cache knows.
func (c *Cache) toEvent(ev *clientv3.Event) (*event, error) {
	e := &event{key: string(ev.Kv.Key), rev: ev.Kv.ModRevision}
	if ev.PrevKv != nil && !ev.IsCreate() {
		prev, err := c.decode(ev.PrevKv.Value, ev.PrevKv.ModRevision)
		if err != nil {
			return nil, err
		}
		e.prev = prev
	}
	switch {
	case ev.Type == mvccpb.DELETE:
		e.typ = watch.Deleted
	case ev.IsCreate():
		e.typ = watch.Added
	default:
		e.typ = watch.Modified
	}
	if e.typ != watch.Deleted {
		cur, err := c.decode(ev.Kv.Value, ev.Kv.ModRevision)
		if err != nil {
			return nil, err
		}
		e.cur = cur
	}
	return e, nil
}

// completeLocked fills in the previous state of a live event from the
// cache's objects, and a DELETED event's object: the last state, stamped
// with the deletion's revision.
func (c *Cache) completeLocked(e *event, ev *clientv3.Event) error {
	if e.prev == nil && e.typ != watch.Added && e.rev > c.listRev {
		e.prev = c.objects[e.key]
	}
	if e.typ == watch.Deleted {
		if e.prev == nil {
			return fmt.Errorf("deleted at revision %d without a known previous value", ev.Kv.ModRevision)
		}
		e.cur = &state{obj: e.prevObjectAtRev(), labels: e.prev.labels, fields: e.prev.fields}
	}
	return nil
}

func (c *Cache) decode(value []byte, rev int64) (*state, error) {
	obj, err := c.cfg.Decode(value, rev)
	if err != nil {
		return nil, err
	}
	l, f, err := c.cfg.Attrs(obj)
	if err != nil {
		return nil, err
	}
	return &state{obj: obj, labels: l, fields: f}, nil
}

// A value the cache cannot decode is skipped, so that one corrupt key does
// not stop every watcher of the resource; direct reads of it still fail loudly.
func (c *Cache) logCorrupt(key string, err error) {
	c.cfg.Logger.Error("watch cache skipped an undecodable value", "key", key, "err", err)
}
