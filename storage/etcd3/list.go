package etcd3

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// maxPageSize bounds one etcd range read when a selector filters items out.
const maxPageSize = 10000

// kube-apiserver's words for a continue token whose revision was compacted.
const continueExpired = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
	"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// listRead says where and at which revision a list reads.
type listRead struct {
	prefix  string
	fromKey string
	rev     int64 // 0: the latest
	minRV   int64 // the read must be at least this recent
}

// List reads one page of objects, consistently at one revision.
func (s *Store) List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error) {
	read, err := s.planList(opts)
	if err != nil {
		return nil, err
	}
	// An exact revision (resourceVersionMatch=Exact, a paginated list from
	// N, a continue token) is served from the watch cache while it holds
	// that revision, as kube-apiserver 1.37 serves it; otherwise, and with
	// the cache off, etcd answers (and may have compacted it).
	if read.rev > 0 && !s.cfg.WatchFromEtcd {
		items, ok, err := s.cache.ListAt(ctx, read.rev, read.prefix, read.fromKey)
		if err != nil {
			return nil, err
		}
		if ok {
			return pageOf(items, read, opts)
		}
	}
	end := clientv3.GetPrefixRangeEnd(read.prefix)
	pageSize := opts.Limit
	if pageSize <= 0 || pageSize > maxPageSize {
		pageSize = maxPageSize
	}
	result := &storage.ListResult{}
	key := read.fromKey
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if read.rev > 0 {
			ops = append(ops, clientv3.WithRev(read.rev))
		}
		resp, err := s.cfg.Client.Get(ctx, key, ops...)
		if err != nil {
			return nil, s.listError(ctx, err, opts, key, read)
		}
		if read.rev == 0 {
			read.rev = resp.Header.Revision
			if read.minRV > read.rev {
				return nil, &storage.Error{Code: storage.CodeTooLargeResourceVersion, Requested: read.minRV, Current: read.rev}
			}
		}
		result.ResourceVersion = read.rev
		for i, kv := range resp.Kvs {
			obj, err := s.decode(string(kv.Key), kv.Value, kv.ModRevision)
			if err != nil {
				return nil, err
			}
			if !opts.Predicate.Empty() {
				l, f, err := s.cfg.Attrs(obj)
				if err != nil {
					return nil, err
				}
				if !opts.Predicate.Matches(l, f) {
					continue
				}
			}
			result.Items = append(result.Items, obj)
			if opts.Limit > 0 && int64(len(result.Items)) == opts.Limit {
				if i < len(resp.Kvs)-1 || resp.More {
					return result, s.setContinue(result, resp, i, string(kv.Key), read, opts)
				}
				return result, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return result, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		// A selector is discarding items: read larger pages to fill this one.
		pageSize = min(2*pageSize, maxPageSize)
	}
}

// pageOf is one page of a list served from the watch cache, with the
// continue token and remaining count kube's cacher gives it.
func pageOf(items []watchcache.Item, read listRead, opts storage.ListOptions) (*storage.ListResult, error) {
	result := &storage.ListResult{ResourceVersion: read.rev}
	for i, it := range items {
		if !opts.Predicate.Empty() && !opts.Predicate.Matches(it.Labels, it.Fields) {
			continue
		}
		result.Items = append(result.Items, it.Object)
		if opts.Limit > 0 && int64(len(result.Items)) == opts.Limit {
			if i == len(items)-1 {
				break
			}
			token, err := storage.EncodeContinue(it.Key+"\x00", read.prefix, read.rev)
			if err != nil {
				return nil, err
			}
			result.Continue = token
			if opts.Predicate.Empty() {
				remaining := int64(len(items) - (i + 1))
				result.RemainingItemCount = &remaining
			}
			break
		}
	}
	return result, nil
}

func (s *Store) setContinue(result *storage.ListResult, resp *clientv3.GetResponse, i int, lastKey string, read listRead, opts storage.ListOptions) error {
	token, err := storage.EncodeContinue(lastKey+"\x00", read.prefix, read.rev)
	if err != nil {
		return err
	}
	result.Continue = token
	if opts.Predicate.Empty() {
		// Without a selector every remaining key is a remaining item.
		remaining := resp.Count - int64(i+1)
		result.RemainingItemCount = &remaining
	}
	return nil
}

// planList applies the API's resourceVersion rules: "" latest (consistent),
// "0" any, "N" at least N, Exact exactly N; a continue token fixes both the
// revision and the starting key.
func (s *Store) planList(opts storage.ListOptions) (listRead, error) {
	if !s.cfg.Namespaced && opts.Namespace != "" {
		return listRead{}, &storage.Error{Code: storage.CodeInvalidKey, Resource: s.cfg.Resource,
			Message: "Namespace parameter not allowed: " + s.cfg.Resource.String() + " is cluster-scoped."}
	}
	prefix, err := storage.ListPrefix(s.cfg.Prefix, s.cfg.Resource, opts.Namespace)
	if err != nil {
		return listRead{}, err
	}
	read := listRead{prefix: prefix, fromKey: prefix}
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return listRead{}, storage.InvalidRequest("specifying resource version is not allowed when using continue")
		}
		fromKey, rev, err := storage.DecodeContinue(opts.Continue, prefix)
		if err != nil {
			return listRead{}, err
		}
		read.fromKey = fromKey
		if rev > 0 {
			read.rev = rev
		}
		return read, nil
	}
	rv, err := storage.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return listRead{}, err
	}
	switch opts.ResourceVersionMatch {
	case "":
		if rv > 0 && opts.Limit > 0 {
			read.rev = rv // a paginated list from N reads exactly N, as kube-apiserver does
		} else {
			read.minRV = rv
		}
	case metav1.ResourceVersionMatchNotOlderThan:
		if opts.ResourceVersion == "" {
			return listRead{}, storage.InvalidRequest(`resourceVersionMatch "NotOlderThan" is forbidden unless resourceVersion is provided`)
		}
		read.minRV = rv
	case metav1.ResourceVersionMatchExact:
		if rv == 0 {
			return listRead{}, storage.InvalidRequest(`resourceVersionMatch "Exact" is forbidden for resourceVersion "` + opts.ResourceVersion + `"`)
		}
		read.rev = rv
	default:
		return listRead{}, storage.InvalidRequest("unknown resourceVersionMatch " + string(opts.ResourceVersionMatch))
	}
	return read, nil
}

// listError explains why etcd refused a read at a revision.
func (s *Store) listError(ctx context.Context, err error, opts storage.ListOptions, key string, read listRead) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted) && opts.Continue != "":
		next, encErr := storage.EncodeContinue(key, read.prefix, -1)
		if encErr != nil {
			next = ""
		}
		return &storage.Error{Code: storage.CodeExpired, Message: continueExpired, Continue: next, Err: err}
	case errors.Is(err, rpctypes.ErrCompacted):
		return &storage.Error{Code: storage.CodeExpired, Message: "The resourceVersion for the provided list is too old.", Err: err}
	case errors.Is(err, rpctypes.ErrFutureRev):
		current := int64(0)
		if resp, getErr := s.cfg.Client.Get(ctx, read.prefix, clientv3.WithCountOnly()); getErr == nil {
			current = resp.Header.Revision
		}
		return &storage.Error{Code: storage.CodeTooLargeResourceVersion, Requested: read.rev, Current: current, Err: err}
	}
	return s.etcdError(err)
}
