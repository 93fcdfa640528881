package watchcache

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
)

// InitialEventsEndAnnotation marks the BOOKMARK that ends a watch's initial
// events (sendInitialEvents=true), as in kube-apiserver.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"

// freshnessTimeout is how long a request for a resourceVersion the cache has
// not reached yet waits before it is refused, as in kube-apiserver.
const freshnessTimeout = 3 * time.Second

// readyTimeout bounds how long a watch waits for a cache that is still
// reading etcd (at start, or after falling behind a compaction).
const readyTimeout = 10 * time.Second

// Watch starts a watch. Objects in its events are shared with other
// watchers and must not be modified.
func (c *Cache) Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	plan, err := c.planWatch(ctx, opts)
	if err != nil {
		return nil, err
	}
	w := &watcher{
		cache:     c,
		pred:      opts.Predicate,
		bookmarks: opts.AllowWatchBookmarks,
		deadline:  opts.Deadline,
	}
	if opts.Namespace != "" {
		w.keyPrefix = c.cfg.Prefix + "/" + opts.Namespace + "/"
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errStopped(c)
	}
	if start := c.windowStartLocked(); plan.fromRV > 0 && plan.fromRV < start {
		return errorWatch(storage.TooOldResourceVersion(plan.fromRV, start)), nil
	}
	var initial []watch.Event
	if plan.initialState {
		initial = c.stateEventsLocked(w)
		w.seen = max(c.rv, c.listRev)
	} else {
		w.seen = plan.fromRV
		for _, e := range c.history.since(plan.fromRV) {
			if ev, ok := w.convert(e); ok {
				initial = append(initial, ev)
			}
			w.seen = e.rev
		}
	}
	if plan.initialEventsEnd {
		initial = append(initial, c.bookmark(c.rv, true))
	}
	// The queue starts with the initial events, with room for WatcherBuffer
	// more.
	w.limit = len(initial) + c.cfg.WatcherBuffer
	w.out = make(chan watch.Event, min(w.limit, resultChanSize))
	for _, ev := range initial {
		c.queueLocked(w, ev)
	}
	w.nextBookmark = w.nextBookmarkTime(time.Now(), c.cfg.BookmarkFrequency)
	c.nextID++
	w.id = c.nextID
	c.watchers[w.id] = w
	return w, nil
}

// watchPlan says where a watch starts: from a revision (replaying history
// after it), or from the current state (a synthetic ADDED per object).
type watchPlan struct {
	fromRV           int64
	initialState     bool
	initialEventsEnd bool
}

func (c *Cache) planWatch(ctx context.Context, opts storage.WatchOptions) (watchPlan, error) {
	rv, err := storage.ValidateWatch(opts)
	if err != nil {
		return watchPlan{}, err
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents

	// "" asks for the latest state: wait until the cache has seen everything
	// etcd had when the request arrived. "N" must not be ahead of the cache.
	switch {
	case opts.ResourceVersion == "":
		if err := c.waitFresh(ctx, 0); err != nil {
			return watchPlan{}, err
		}
	case rv > 0:
		if err := c.waitFresh(ctx, rv); err != nil {
			return watchPlan{}, err
		}
	}

	switch {
	case sendInitial:
		return watchPlan{initialState: true, initialEventsEnd: opts.AllowWatchBookmarks}, nil
	case opts.SendInitialEvents != nil:
		// sendInitialEvents=false: changes after rv, or after now for "" and "0".
		if rv == 0 {
			return watchPlan{fromRV: c.ResourceVersion()}, nil
		}
		return watchPlan{fromRV: rv}, nil
	case rv == 0:
		return watchPlan{initialState: true}, nil
	default:
		return watchPlan{fromRV: rv}, nil
	}
}

func (c *Cache) waitReady(ctx context.Context) error {
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	select {
	case <-ready:
		return nil
	case <-timeout.C:
		return &storage.Error{Code: storage.CodeUnavailable, Message: "the watch cache of " + c.cfg.Resource.String() + " is not ready yet"}
	case <-c.done:
		return errStopped(c)
	case <-ctx.Done():
		return &storage.Error{Code: storage.CodeUnavailable, Message: "the watch cache of " + c.cfg.Resource.String() + " is not ready: " + ctx.Err().Error()}
	}
}

// WaitUntilFresh waits until the cache has seen revision rev (0: etcd's
// current one), a few seconds at most, as kube's waitUntilFreshAndBlock:
// a view that has just written reads the window as of its write.
func (c *Cache) WaitUntilFresh(ctx context.Context, rev int64) error { return c.waitFresh(ctx, rev) }

// waitFresh waits until the cache has reached rev; rev 0 means etcd's
// current revision, read now. Like kube-apiserver it waits a few seconds.
func (c *Cache) waitFresh(ctx context.Context, rev int64) error {
	if rev == 0 {
		resp, err := c.cfg.Client.Get(ctx, c.cfg.Prefix+"/", clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return &storage.Error{Code: storage.CodeUnavailable, Message: err.Error(), Err: err}
		}
		rev = resp.Header.Revision
	}
	timeout := time.NewTimer(freshnessTimeout)
	defer timeout.Stop()
	// etcd defers a progress request while any watcher on the stream is
	// catching up (as the watch caches do at start) and may then not answer
	// it until the next event; asking again keeps the wait short.
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for {
		c.mu.Lock()
		current, fresher := c.rv, c.fresher
		c.mu.Unlock()
		if current >= rev {
			return nil
		}
		c.requestProgress()
		select {
		case <-retry.C:
		case <-fresher:
		case <-timeout.C:
			return &storage.Error{Code: storage.CodeTooLargeResourceVersion, Requested: rev, Current: current}
		case <-c.done:
			return errStopped(c)
		case <-ctx.Done():
			return &storage.Error{Code: storage.CodeUnavailable, Message: ctx.Err().Error()}
		}
	}
}

// stateEventsLocked is a synthetic ADDED for every current object the
// watcher selects, in key order.
func (c *Cache) stateEventsLocked(w *watcher) []watch.Event {
	keys := make([]string, 0, len(c.objects))
	for k := range c.objects {
		if strings.HasPrefix(k, w.keyPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	events := make([]watch.Event, 0, len(keys))
	for _, k := range keys {
		st := c.objects[k]
		if w.pred.Matches(st.labels, st.fields) {
			events = append(events, watch.Event{Type: watch.Added, Object: st.obj})
		}
	}
	return events
}

// bookmark is an object of the resource's kind that carries nothing but a
// resourceVersion (and, at the end of initial events, the annotation saying so).
func (c *Cache) bookmark(rv int64, initialEventsEnd bool) watch.Event {
	obj := c.cfg.NewFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rv, 10))
		if initialEventsEnd {
			m.SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true"})
		}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

func (c *Cache) dispatchLocked(w *watcher, e *event) {
	ev, ok := w.convert(e)
	if !ok {
		return
	}
	if !c.queueLocked(w, ev) {
		// The watcher cannot keep up: close it rather than let it hold back
		// the others or grow without bound. Its client resumes from the last
		// resourceVersion it saw.
		c.cfg.Logger.Info("closing a watcher that cannot keep up", "resource", c.cfg.Resource.String(), "buffer", c.cfg.WatcherBuffer)
		c.stalled.Add(1)
		c.removeLocked(w)
	}
}

// resultChanSize is the room in a watcher's result channel. Events past
// it wait in the watcher's pending list, up to its limit, and a feeder
// goroutine, which runs only while some wait, passes them on as the
// client reads: an idle watcher holds a small channel, not one with room
// for its whole limit (3.2 KB at the default 100 events, on every watch).
const resultChanSize = 16

// queueLocked queues ev for w without waiting; false if w already has
// its limit of events waiting.
func (c *Cache) queueLocked(w *watcher, ev watch.Event) bool {
	if len(w.pending) == 0 {
		select {
		case w.out <- ev:
			return true
		default:
		}
	}
	if len(w.out)+len(w.pending) >= w.limit {
		return false
	}
	w.pending = append(w.pending, ev)
	if w.stopFeed == nil {
		w.stopFeed = make(chan struct{})
		go c.feed(w, w.stopFeed)
	}
	return true
}

// feed passes w's pending events to its result channel, in order, as the
// client reads them; it ends once none are left, or, when w is removed,
// closes the channel (what was still pending is dropped: the client
// resumes from the last resourceVersion it saw).
func (c *Cache) feed(w *watcher, stop <-chan struct{}) {
	for {
		c.mu.Lock()
		_, open := c.watchers[w.id]
		if !open || len(w.pending) == 0 {
			w.pending, w.stopFeed = nil, nil
			if !open {
				close(w.out)
			}
			c.mu.Unlock()
			return
		}
		// Only the feeder takes from pending: the head stays until sent.
		ev := w.pending[0]
		c.mu.Unlock()
		select {
		case w.out <- ev:
			c.mu.Lock()
			w.pending[0] = watch.Event{}
			w.pending = w.pending[1:]
			c.mu.Unlock()
		case <-stop:
		}
	}
}

// removeLocked ends w: its result channel is closed, by its feeder if
// one is running (which may be waiting to send on it).
func (c *Cache) removeLocked(w *watcher) {
	if _, ok := c.watchers[w.id]; !ok {
		return
	}
	delete(c.watchers, w.id)
	if w.stopFeed != nil {
		close(w.stopFeed)
		return
	}
	close(w.out)
}

// sendBookmarks follows kube-apiserver's cacher: every second it looks
// for watchers whose bookmark is due (every BookmarkFrequency, and 2 s
// before the deadline) and sends each a BOOKMARK at the cache's revision,
// but only if that revision is newer than what the watcher's start
// covered (kube's cacheWatcher sends "only events newer than
// resourceVersion"): a watch during which its resource did not move gets
// none. The revision is what the cache has processed, events and etcd's
// progress notifications alike; kube asks etcd for no fresher one.
//
// Like kube's watcherBookmarkTimeBuckets, a bookmark is due from the
// start of the whole second (counted from when the cache started) that
// holds its time, so up to a second early; rescheduled then, the one
// before the deadline is still ahead and is due again a second later.
// That is why kube often sends it twice.
func (c *Cache) sendBookmarks(ctx context.Context) {
	epoch := time.Now()
	second := func(t time.Time) int64 { return int64(t.Sub(epoch) / time.Second) }
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			c.mu.Lock()
			for _, w := range c.watchers {
				if !w.bookmarks || w.nextBookmark.IsZero() || second(w.nextBookmark) > second(now) {
					continue
				}
				if c.rv > w.seen && len(w.pending) == 0 {
					select {
					case w.out <- c.bookmark(c.rv, false):
					default: // a full queue already carries a newer position
					}
				}
				w.nextBookmark = w.nextBookmarkTime(now, c.cfg.BookmarkFrequency)
			}
			c.mu.Unlock()
		}
	}
}

// watcher is one client's watch: a queue that starts with its initial
// events and then takes what the cache dispatches to it, filtered by
// namespace and selectors. The cache closes the queue to end the watch.
// The queue is the result channel and, past its room, pending.
type watcher struct {
	id           uint64
	cache        *Cache
	keyPrefix    string
	pred         storage.Predicate
	bookmarks    bool
	deadline     time.Time
	nextBookmark time.Time
	out          chan watch.Event
	// pending holds what does not fit in out, in order; limit bounds
	// the two together. stopFeed is non-nil while a feeder runs.
	pending  []watch.Event
	limit    int
	stopFeed chan struct{}
	// seen is the revision of the newest event the watcher's start
	// covered (its initial state, or the history it was given): later
	// events are sent to it, older ones never again.
	seen int64
}

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.out }

// Stop implements watch.Interface.
func (w *watcher) Stop() {
	w.cache.mu.Lock()
	defer w.cache.mu.Unlock()
	w.cache.removeLocked(w)
}

// convert turns a change into what this watcher sees, if anything: an
// object entering its selector is ADDED, one leaving it is DELETED.
func (w *watcher) convert(e *event) (watch.Event, bool) {
	if !strings.HasPrefix(e.key, w.keyPrefix) {
		return watch.Event{}, false
	}
	curMatches := e.typ != watch.Deleted && w.pred.Matches(e.cur.labels, e.cur.fields)
	prevMatches := e.prev != nil && w.pred.Matches(e.prev.labels, e.prev.fields)
	switch {
	case curMatches && prevMatches:
		return watch.Event{Type: watch.Modified, Object: e.cur.obj}, true
	case curMatches:
		return watch.Event{Type: watch.Added, Object: e.cur.obj}, true
	case prevMatches && e.typ == watch.Deleted:
		return watch.Event{Type: watch.Deleted, Object: e.cur.obj}, true
	case prevMatches:
		return watch.Event{Type: watch.Deleted, Object: e.prevObjectAtRev()}, true
	}
	return watch.Event{}, false
}

// nextBookmarkTime follows kube-apiserver: about every frequency, and 2s
// before the watch's deadline; no bookmark if the deadline is that close.
func (w *watcher) nextBookmarkTime(now time.Time, frequency time.Duration) time.Time {
	if !w.bookmarks {
		return time.Time{}
	}
	next := now.Add(frequency)
	if w.deadline.IsZero() {
		return next
	}
	if pre := w.deadline.Add(-2 * time.Second); pre.Before(next) {
		next = pre
	}
	if next.Before(now) {
		return time.Time{}
	}
	return next
}

// prevObjectAtRev is the previous state stamped with this event's
// revision, the object of a DELETED event. Made once, shared by watchers.
func (e *event) prevObjectAtRev() runtime.Object {
	if e.prevAtRev == nil {
		obj := e.prev.obj.DeepCopyObject()
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(strconv.FormatInt(e.rev, 10))
		}
		e.prevAtRev = obj
	}
	return e.prevAtRev
}

// errorWatch delivers one ERROR event with err's Status, then ends: how a
// watch learns its resourceVersion is too old.
func errorWatch(err *storage.Error) watch.Interface {
	st := err.Status()
	ch := make(chan watch.Event, 1)
	ch <- watch.Event{Type: watch.Error, Object: &st}
	close(ch)
	return &closedWatch{ch: ch}
}

type closedWatch struct{ ch chan watch.Event }

func (w *closedWatch) ResultChan() <-chan watch.Event { return w.ch }
func (w *closedWatch) Stop()                          {}

func errStopped(c *Cache) error {
	return &storage.Error{Code: storage.CodeUnavailable, Message: "the watch cache of " + c.cfg.Resource.String() + " is stopping"}
}
