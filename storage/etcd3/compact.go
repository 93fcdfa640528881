package etcd3

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactRevKey is the key kube-apiserver's compactor uses to agree, among
// several API servers sharing one etcd, on who compacts each interval.
const compactRevKey = "compact_rev_key"

// Compactor compacts etcd, periodically and on demand, as kube-apiserver's
// compactor does: it writes the revision it compacts at to compactRevKey
// first, which is how every watch cache learns of it (compactionFollower)
// and drops its snapshots below it, so that exact lists and continue
// tokens below it go to etcd and get etcd's 410. The watch caches' windows
// do not move: watches are still served from their own history. A
// compaction behind kubelab's back (etcdctl compact) writes no key, and
// the caches go on serving what they hold, as kube's do.
type Compactor struct {
	client *clientv3.Client
	logger *slog.Logger

	compactions atomic.Uint64
}

// NewCompactor compacts the etcd behind client.
func NewCompactor(client *clientv3.Client, logger *slog.Logger) *Compactor {
	if logger == nil {
		logger = slog.Default()
	}
	return &Compactor{client: client, logger: logger}
}

// Compactions counts the compactions this compactor made.
func (c *Compactor) Compactions() uint64 { return c.compactions.Load() }

// CompactNow compacts etcd at its current revision: no older revision can
// be read from etcd afterwards, nor from a watch cache's snapshots. It
// returns that revision. Like a round of Run, it first writes the revision
// to compactRevKey (so etcd's revision moves one past it); the next round
// of Run, finding the key's version moved, skips its compaction.
func (c *Compactor) CompactNow(ctx context.Context) (int64, error) {
	resp, err := c.client.Get(ctx, compactRevKey)
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := c.client.Put(ctx, compactRevKey, strconv.FormatInt(rev, 10)); err != nil {
		return 0, err
	}
	if err := c.compact(ctx, rev); err != nil {
		return 0, err
	}
	return rev, nil
}

func (c *Compactor) compact(ctx context.Context, rev int64) error {
	if _, err := c.client.Compact(ctx, rev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return err
	}
	announceCompaction(c.client, rev)
	c.compactions.Add(1)
	c.logger.Info("compacted etcd", "revision", rev)
	return nil
}

// Run compacts every interval until ctx ends, like kube-apiserver: each
// time to the revision seen one interval earlier, so that a full interval
// of history stays watchable. When several servers share the etcd, the
// compare-and-swap on compactRevKey lets only one of them compact.
func (c *Compactor) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var version, rev int64
	for {
		var err error
		version, rev, err = c.compactRound(ctx, version, rev)
		if err != nil && ctx.Err() == nil {
			c.logger.Warn("etcd compaction failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// compactRound claims this round by bumping compactRevKey's version from
// the one seen last round; the winner compacts to the revision seen then.
// It returns the version and revision to use next round.
func (c *Compactor) compactRound(ctx context.Context, version, prevRev int64) (int64, int64, error) {
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(prevRev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return version, prevRev, err
	}
	current := resp.Header.Revision
	if !resp.Succeeded {
		// Another server won this round; follow its count.
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) > 0 {
			return kvs[0].Version, current, nil
		}
		return version, current, nil
	}
	if prevRev > 0 {
		if err := c.compact(ctx, prevRev); err != nil {
			return version + 1, current, err
		}
	}
	return version + 1, current, nil
}

// Compacted is etcd's compacted revision (CompactedRevision), whoever
// compacted it: this compactor, another kubelab, or etcdctl.
func (c *Compactor) Compacted(ctx context.Context) (int64, error) {
	return CompactedRevision(ctx, c.client)
}
