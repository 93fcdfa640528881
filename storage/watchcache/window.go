package watchcache

import "time"

// Window describes the cache's window of events, for the lesson's views:
// a watch from a resourceVersion older than Start gets
// "too old resource version: X (Start)".
type Window struct {
	// Start is the oldest resourceVersion a watch can resume from.
	Start int64
	// Head is the revision the cache is current to.
	Head int64
	// Events is how many events the window holds; Capacity how many it
	// may hold before it drops or grows.
	Events, Capacity int
	// OldestRecorded is when the oldest event kept arrived (zero with no
	// events). While it is younger than Fresh, a full window grows
	// rather than drops it.
	OldestRecorded time.Time
	Fresh          time.Duration
}

// Window reports the cache's window now.
func (c *Cache) Window() Window {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := Window{Start: c.windowStartLocked(), Head: c.rv, Events: c.history.n,
		Capacity: c.history.capacity(), Fresh: c.history.fresh}
	if e := c.history.oldest(); e != nil {
		w.OldestRecorded = e.recorded
	}
	return w
}

// DropWait says how long, from now, the window must wait before new
// changes can push it past rv, so that a watch from rv gets 410. A watch
// from rv is too old once the first event after rv has been dropped, and
// a full window drops its oldest event only when that event is at least
// Fresh old; younger, the window grows instead (kube's resizeCacheLocked).
// So the wait is until the first event kept after rv is Fresh old. made
// is false when there is no such event yet: the first change after rv is
// still to be made, and then waited for. The wait is 0 when the window
// can be pushed now, or is past rv already.
func (c *Cache) DropWait(rv int64, now time.Time) (wait time.Duration, made bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rv < c.windowStartLocked() {
		return 0, true
	}
	after := c.history.since(rv)
	if len(after) == 0 {
		return c.history.fresh, false
	}
	return max(0, c.history.fresh-now.Sub(after[0].recorded)), true
}
