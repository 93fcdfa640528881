package watchcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// follow lists the resource if the cache has no consistent state, then
// applies etcd's live events until the watch fails. Like kube-apiserver's
// cacher, a cache that lists starts its window at the list's revision:
// what etcd still holds from before is not served (unless
// ReplayEtcdHistory asks for it).
func (c *Cache) follow(ctx context.Context) error {
	c.mu.Lock()
	listed := c.listed
	c.mu.Unlock()
	if !listed {
		if err := c.relist(ctx); err != nil {
			return err
		}
		if c.cfg.ReplayEtcdHistory {
			if err := c.replay(ctx); err != nil {
				return err
			}
		} else {
			c.startAtList()
		}
	}
	c.mu.Lock()
	from := c.rv + 1
	c.mu.Unlock()
	err := c.watchFrom(ctx, from, false)
	var compacted errCompacted
	if errors.As(err, &compacted) {
		c.desync(compacted.rev)
	}
	return err
}

// replay fills the history with the events etcd still has from before the
// list, so that a client resuming from a resourceVersion older than this
// process can carry on. It ends once the cache has caught up with the list.
func (c *Cache) replay(ctx context.Context) error {
	err := c.watchFrom(ctx, 1, true)
	var compacted errCompacted
	if errors.As(err, &compacted) && compacted.beforeAnyEvent {
		// History before the compaction revision is gone; start there.
		err = c.watchFrom(ctx, compacted.rev, true)
	}
	if errors.As(err, &compacted) {
		c.desync(compacted.rev)
	}
	if errors.Is(err, errCaughtUp) {
		return nil
	}
	return err
}

var errCaughtUp = errors.New("watch cache caught up with its list")

type errCompacted struct {
	rev            int64
	beforeAnyEvent bool
}

func (e errCompacted) Error() string {
	return fmt.Sprintf("etcd compacted revision %d before the cache read it", e.rev)
}

// watchFrom applies etcd's events from revision from on. A replay asks etcd
// for each event's previous value too (the list already holds the newest
// state, not the one before a replayed event) and stops once caught up;
// live events find their previous value in the cache itself, which spares
// etcd a read per event.
func (c *Cache) watchFrom(ctx context.Context, from int64, replay bool) error {
	// Each resource watches on a gRPC stream of its own (clientv3 shares a
	// stream among watches whose contexts carry the same metadata). etcd
	// answers a progress request only once every watch on the stream has
	// caught up, so on a shared stream one resource replaying its history
	// would keep every other resource from confirming it is fresh.
	streamCtx := metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(ctx), "kubelab-watch-resource", c.cfg.Resource.String())
	wctx, cancel := context.WithCancel(streamCtx)
	defer cancel()
	c.progressMu.Lock()
	c.progressCtx = wctx
	c.progressMu.Unlock()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(from),
		clientv3.WithProgressNotify(), clientv3.WithCreatedNotify()}
	if replay {
		opts = append(opts, clientv3.WithPrevKV())
	}
	wch := c.cfg.Client.Watch(wctx, c.cfg.Prefix+"/", opts...)
	applied := false
	for resp := range wch {
		if resp.CompactRevision != 0 {
			// etcd confirms the watch before it reports the compaction, so
			// what matters is whether any event was applied yet.
			return errCompacted{rev: resp.CompactRevision, beforeAnyEvent: !applied}
		}
		if err := resp.Err(); err != nil {
			return err
		}
		if resp.Created {
			if replay {
				c.startReplay(from - 1)
				go c.nudgeUntilCaughtUp(wctx)
			}
			continue
		}
		c.apply(resp)
		applied = true
		if replay && c.isCaughtUp() {
			return errCaughtUp
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("etcd watch channel closed")
}

// nudgeUntilCaughtUp asks etcd for its revision until the replay has caught
// up. etcd ignores a progress request while the watch is still sending old
// events, and a resource with no events after its list learns that it is
// current only from a progress notification: without asking again it would
// wait for etcd's periodic one, seconds away.
func (c *Cache) nudgeUntilCaughtUp(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !c.isCaughtUp() {
		c.requestProgress()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *Cache) isCaughtUp() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caughtUp
}

// relist replaces the cache's objects with a consistent list from etcd.
func (c *Cache) relist(ctx context.Context) error {
	objects := map[string]*state{}
	var rev int64
	key, end := c.cfg.Prefix+"/", clientv3.GetPrefixRangeEnd(c.cfg.Prefix+"/")
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.cfg.Client.Get(ctx, key, opts...)
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			if st, err := c.decode(kv.Value, kv.ModRevision); err != nil {
				c.logCorrupt(string(kv.Key), err)
			} else {
				objects[string(kv.Key)] = st
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects = objects
	c.listRev, c.listed = rev, true
	// Like kube's Replace, a list starts the snapshots anew, at itself.
	c.snapshotFloor = rev
	c.setRVLocked(rev)
	return nil
}

// startReplay marks where replayed history begins.
func (c *Cache) startReplay(after int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history.reset()
	c.listStart = after
}

// startAtList empties the window and starts it at the list's revision, as
// kube's watch cache does on every list (at start, or after falling behind
// a compaction): the cache is current as soon as it has listed.
func (c *Cache) startAtList() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history.reset()
	c.listStart = c.listRev
	c.advanceLocked(c.listRev)
}

// desync drops the cache's state after etcd compacted past it: watchers are
// closed (they resume, and get 410 if they are too far behind) and the next
// round relists.
func (c *Cache) desync(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.Logger.Warn("watch cache fell behind a compaction; relisting", "resource", c.cfg.Resource.String(), "compactRevision", rev)
	for _, w := range c.watchers {
		c.removeLocked(w)
	}
	c.listed, c.caughtUp = false, false
	c.ready = make(chan struct{})
}

func (c *Cache) requestProgress() {
	c.progressMu.Lock()
	ctx := c.progressCtx
	c.progressMu.Unlock()
	if ctx == nil {
		return
	}
	if err := c.cfg.Client.RequestProgress(ctx); err != nil && ctx.Err() == nil {
		c.cfg.Logger.Debug("etcd progress request failed", "resource", c.cfg.Resource.String(), "err", err)
	}
}
