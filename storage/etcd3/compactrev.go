package etcd3

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/storage/watchcache"
)

// compactionFollower learns, as kube-apiserver's etcd3 compactor does
// (runWatchLoop), the revision compactors compact at from compact_rev_key,
// which each of them writes before it compacts, and tells every watch
// cache over the same etcd client. It is all a watch cache knows of
// compaction: a compaction that does not write the key (etcdctl compact)
// leaves the caches' snapshots, and so their exact lists, as they were.
//
// kube's cacher polls this revision every 15 s; the caches here are told
// at once, so that "Compact now" shows its effect when it is pressed.
type compactionFollower struct {
	mu     sync.Mutex
	rev    int64
	caches map[*watchcache.Cache]struct{}
	cancel context.CancelFunc
}

// One follower per etcd client, as kube keeps one compactor per endpoint.
var (
	followersMu sync.Mutex
	followers   = map[*clientv3.Client]*compactionFollower{}
)

// followCompactions tells cache of compactions from now on; the returned
// function stops that, and the last one stops the follower.
func followCompactions(client *clientv3.Client, cache *watchcache.Cache, logger *slog.Logger) (stop func()) {
	followersMu.Lock()
	f, ok := followers[client]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		f = &compactionFollower{caches: map[*watchcache.Cache]struct{}{}, cancel: cancel}
		followers[client] = f
		go f.run(ctx, client, logger)
	}
	followersMu.Unlock()

	f.mu.Lock()
	f.caches[cache] = struct{}{}
	if f.rev > 0 {
		cache.Compact(f.rev)
	}
	f.mu.Unlock()

	return func() {
		followersMu.Lock()
		defer followersMu.Unlock()
		f.mu.Lock()
		delete(f.caches, cache)
		last := len(f.caches) == 0
		f.mu.Unlock()
		if last && followers[client] == f {
			f.cancel()
			delete(followers, client)
		}
	}
}

func (f *compactionFollower) run(ctx context.Context, client *clientv3.Client, logger *slog.Logger) {
	for ctx.Err() == nil {
		err := f.follow(ctx, client)
		if ctx.Err() != nil {
			return
		}
		logger.Debug("following compact_rev_key failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// follow reads compact_rev_key, then watches it from there.
func (f *compactionFollower) follow(ctx context.Context, client *clientv3.Client) error {
	resp, err := client.Get(ctx, compactRevKey)
	if err != nil {
		return err
	}
	if len(resp.Kvs) > 0 {
		f.observe(resp.Kvs[0].Value)
	}
	wch := client.Watch(clientv3.WithRequireLeader(ctx), compactRevKey, clientv3.WithRev(resp.Header.Revision+1))
	for wr := range wch {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.PUT {
				f.observe(ev.Kv.Value)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("the watch of compact_rev_key ended")
}

// announceCompaction tells the caches over client at once of a compaction
// this process made, rather than when the watch of compact_rev_key brings
// it: a list right after "Compact now" sees it.
func announceCompaction(client *clientv3.Client, rev int64) {
	followersMu.Lock()
	f := followers[client]
	followersMu.Unlock()
	if f != nil {
		f.observeRev(rev)
	}
}

// observe takes a value of compact_rev_key: the revision a compactor
// compacts at (0 on its first round, which compacts nothing).
func (f *compactionFollower) observe(value []byte) {
	rev, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return
	}
	f.observeRev(rev)
}

func (f *compactionFollower) observeRev(rev int64) {
	if rev <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if rev <= f.rev {
		return
	}
	f.rev = rev
	for c := range f.caches {
		c.Compact(rev)
	}
}
