package watchcache

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Item is one object of a list served from the cache, with its etcd key
// (for a continue token) and what selectors match on. The object is
// shared with watchers and other lists and must not be modified.
type Item struct {
	Key    string
	Object runtime.Object
	Labels labels.Set
	Fields fields.Set
}

// ListAt is the state of the objects under prefix at revision rv, from
// fromKey on, in key order: kube-apiserver 1.37's exact list from its
// watch cache (ListFromCacheSnapshot, on by default), which serves an
// exact resourceVersion, and a continue token's, while the cache holds a
// snapshot at or below it. kube keeps a snapshot at its list and at each
// event; the cache instead rebuilds the state at rv from its current
// objects and the events after rv, undone newest first with their
// previous objects, which costs nothing per event. ok is false when kube
// would have no snapshot (the list goes to etcd, which may answer 410):
// the cache is not ready, or rv is below its list, below the oldest event
// kept once its history has been full, or below what its own compactor
// compacted (Compact).
func (c *Cache) ListAt(ctx context.Context, rv int64, prefix, fromKey string) (items []Item, ok bool, err error) {
	c.mu.Lock()
	caughtUp := c.caughtUp
	c.mu.Unlock()
	if !caughtUp {
		return nil, false, nil
	}
	// A revision the cache has not reached yet is waited for, as kube waits
	// for its cache to be fresh before it looks for the snapshot.
	if err := c.waitFresh(ctx, rv); err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if !c.caughtUp || !c.snapshotAtLocked(rv) {
		c.mu.Unlock()
		return nil, false, nil
	}
	state := make(map[string]*state)
	for k, st := range c.objects {
		if strings.HasPrefix(k, prefix) && k >= fromKey {
			state[k] = st
		}
	}
	undo := c.history.since(rv)
	c.mu.Unlock()

	for i := len(undo) - 1; i >= 0; i-- {
		e := undo[i]
		if !strings.HasPrefix(e.key, prefix) || e.key < fromKey {
			continue
		}
		if e.typ == watch.Added || e.prev == nil {
			delete(state, e.key)
		} else {
			state[e.key] = e.prev
		}
	}
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	items = make([]Item, len(keys))
	for i, k := range keys {
		st := state[k]
		items[i] = Item{Key: k, Object: st.obj, Labels: st.labels, Fields: st.fields}
	}
	return items, true, nil
}

// snapshotAtLocked follows kube's CanServeExactRV: is there a snapshot
// at or below rv? kube's snapshots are one at the list and one per event
// since, less those below the oldest event kept whenever the history is
// full, and those below its compactor's revision.
func (c *Cache) snapshotAtLocked(rv int64) bool {
	floor := max(c.snapshotFloor, c.compactRev)
	if rv < floor {
		return false
	}
	if c.listRev >= floor {
		return rv >= c.listRev
	}
	first := c.history.firstAtOrAfter(floor)
	return first != nil && first.rev <= rv
}

// Compact tells the cache that kube-apiserver's compactor (or kubelab's:
// either writes compact_rev_key) compacted etcd at rev: like kube's
// cacher, it drops its snapshots below rev, so exact lists and continue
// tokens below it go to etcd and get etcd's 410. A compaction that does
// not write compact_rev_key (etcdctl compact) is not known to it, as it
// is not to kube. The watch window does not move.
func (c *Cache) Compact(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compactRev = max(c.compactRev, rev)
}
