package etcd3

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactedRevision is etcd's compacted revision: no read or watch below
// it is served. It asks etcd rather than trusting kubelab's compactor, so
// that a compaction behind kubelab's back (etcdctl compact) shows too. It
// is 0 while nothing below revision 2 is compacted.
func CompactedRevision(ctx context.Context, client *clientv3.Client) (int64, error) {
	// A read at revision 1 fails only once etcd has compacted past it.
	_, err := client.Get(ctx, compactRevKey, clientv3.WithRev(1), clientv3.WithKeysOnly())
	switch {
	case err == nil:
		return 0, nil
	case !errors.Is(err, rpctypes.ErrCompacted):
		return 0, err
	}
	// The read's error does not say where; a watch from revision 1 is
	// cancelled at once with the compacted revision.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range client.Watch(ctx, compactRevKey, clientv3.WithRev(1)) {
		if resp.CompactRevision > 0 {
			return resp.CompactRevision, nil
		}
		if err := resp.Err(); err != nil {
			return 0, err
		}
	}
	return 0, ctx.Err()
}
