// Package etcd3 stores Kubernetes objects in etcd the way kube-apiserver's
// etcd3 store does: one key per object under /registry, writes as
// transactions guarded by ModRevision, resourceVersion = etcd revision.
// Watches are served by a watchcache.Cache that the Store owns.
package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// Config describes one resource's storage.
type Config struct {
	Client     *clientv3.Client
	Resource   schema.GroupResource
	Namespaced bool
	// Prefix is the resource's etcd prefix, e.g. storage.ResourcePrefix(gr, false).
	Prefix  string
	Codec   storage.Codec
	NewFunc func() runtime.Object
	// Attrs defaults to storage.DefaultAttrs.
	Attrs storage.AttrFunc
	// WatchFromEtcd serves every watch from an etcd watch of its own, as
	// kube-apiserver does with --watch-cache=false: a watch from a compacted
	// revision gets etcd's 410, not the watch cache's. The cache still
	// runs, for kubelab's own views of the resource's clock and health.
	WatchFromEtcd bool
	// Cache tunes the watch cache; its client, resource and codec come from here.
	Cache  watchcache.Config
	Logger *slog.Logger
}

// Store keeps one resource's objects in etcd.
type Store struct {
	cfg   Config
	cache *watchcache.Cache
	// stopFollowing ends what the cache learns of compactions.
	stopFollowing func()

	// etcdWatches are the watches open on etcd itself (WatchFromEtcd), so
	// that CloseWatchers and Stop can end them as they end the cache's.
	mu          sync.Mutex
	etcdWatches map[*etcdWatch]struct{}
	stopped     bool
}

// UpdateFunc computes an object's new state from its current one. It may
// modify and return current, which is a fresh copy.
type UpdateFunc = func(current runtime.Object) (runtime.Object, error)

// New starts a store and its watch cache.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil || cfg.Codec == nil || cfg.NewFunc == nil {
		return nil, errors.New("etcd3 store needs a client, a codec and a NewFunc")
	}
	if len(cfg.Prefix) <= len(storage.RootPrefix) || cfg.Prefix[:len(storage.RootPrefix)] != storage.RootPrefix || cfg.Prefix[len(cfg.Prefix)-1] == '/' {
		return nil, fmt.Errorf("etcd3 store prefix %q must lie under %s and not end in /", cfg.Prefix, storage.RootPrefix)
	}
	if cfg.Attrs == nil {
		cfg.Attrs = storage.DefaultAttrs(cfg.Namespaced)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Store{cfg: cfg, etcdWatches: map[*etcdWatch]struct{}{}}
	cc := cfg.Cache
	cc.Client, cc.Resource, cc.Prefix = cfg.Client, cfg.Resource, cfg.Prefix
	cc.Decode = func(value []byte, rev int64) (runtime.Object, error) { return s.decode("", value, rev) }
	cc.NewFunc, cc.Attrs = cfg.NewFunc, cfg.Attrs
	if cc.Logger == nil {
		cc.Logger = cfg.Logger
	}
	s.cache = watchcache.New(cc)
	s.stopFollowing = followCompactions(cfg.Client, s.cache, cfg.Logger)
	return s, nil
}

// Stop closes every watch and the etcd watch behind them.
func (s *Store) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.closeEtcdWatches()
	s.stopFollowing()
	s.cache.Stop()
}

// CloseWatchers ends every current watch, from the cache or from etcd, as
// a restarting API server would; clients resume from the last
// resourceVersion they saw.
func (s *Store) CloseWatchers() {
	s.closeEtcdWatches()
	s.cache.CloseWatchers()
}

func (s *Store) closeEtcdWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.etcdWatches {
		w.cancel()
	}
}

// Cache is the store's watch cache, for views of its clock and history.
func (s *Store) Cache() *watchcache.Cache { return s.cache }

// Resource is the resource the store holds.
func (s *Store) Resource() schema.GroupResource { return s.cfg.Resource }

// Namespaced says whether its objects live in namespaces.
func (s *Store) Namespaced() bool { return s.cfg.Namespaced }

// Key is the etcd key of the object k names.
func (s *Store) Key(k storage.Key) (string, error) {
	return storage.ObjectKey(s.cfg.Prefix, s.cfg.Resource, s.cfg.Namespaced, k)
}

// Create writes obj under k if nothing is there. The store takes obj and
// returns it with its resourceVersion set to the write's revision.
func (s *Store) Create(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error) {
	key, err := s.Key(k)
	if err != nil {
		return nil, err
	}
	data, err := s.encode(obj)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return nil, s.etcdError(err)
	}
	if !resp.Succeeded {
		return nil, &storage.Error{Code: storage.CodeAlreadyExists, Resource: s.cfg.Resource, Name: k.Name, Key: key}
	}
	return obj, setResourceVersion(obj, resp.Header.Revision)
}

// Get reads the object under k. A resourceVersion "N" must not be newer than etcd.
func (s *Store) Get(ctx context.Context, k storage.Key, resourceVersion string) (runtime.Object, error) {
	key, err := s.Key(k)
	if err != nil {
		return nil, err
	}
	minRV, err := storage.ParseResourceVersion(resourceVersion)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.Client.Get(ctx, key)
	if err != nil {
		return nil, s.etcdError(err)
	}
	if minRV > resp.Header.Revision {
		return nil, &storage.Error{Code: storage.CodeTooLargeResourceVersion, Requested: minRV, Current: resp.Header.Revision}
	}
	if len(resp.Kvs) == 0 {
		return nil, s.notFound(k, key)
	}
	return s.decode(key, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// GuaranteedUpdate applies tryUpdate to the current object until the write
// lands on the revision it read (another writer in between means a retry on
// fresh state). Preconditions are checked on every try. An update that
// changes no bytes writes nothing and keeps the resourceVersion.
func (s *Store) GuaranteedUpdate(ctx context.Context, k storage.Key, pre *storage.Preconditions, tryUpdate UpdateFunc) (runtime.Object, error) {
	key, err := s.Key(k)
	if err != nil {
		return nil, err
	}
	kvs, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	for {
		cur, err := s.current(k, key, kvs, pre)
		if err != nil {
			return nil, err
		}
		curData, curRev := kvs[0].Value, kvs[0].ModRevision
		updated, err := tryUpdate(cur)
		if err != nil {
			return nil, err
		}
		data, err := s.encode(updated)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(data, curData) {
			return updated, setResourceVersion(updated, curRev)
		}
		txn, err := s.cfg.Client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", curRev)).
			Then(clientv3.OpPut(key, string(data))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return nil, s.etcdError(err)
		}
		if txn.Succeeded {
			return updated, setResourceVersion(updated, txn.Header.Revision)
		}
		kvs = txn.Responses[0].GetResponseRange().Kvs
	}
}

// Delete removes the object under k if the preconditions hold, and returns
// its last state with the deletion's revision as resourceVersion.
func (s *Store) Delete(ctx context.Context, k storage.Key, pre *storage.Preconditions) (runtime.Object, error) {
	key, err := s.Key(k)
	if err != nil {
		return nil, err
	}
	kvs, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	for {
		cur, err := s.current(k, key, kvs, pre)
		if err != nil {
			return nil, err
		}
		txn, err := s.cfg.Client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return nil, s.etcdError(err)
		}
		if txn.Succeeded {
			return cur, setResourceVersion(cur, txn.Header.Revision)
		}
		kvs = txn.Responses[0].GetResponseRange().Kvs
	}
}

// Watch starts a watch served by the store's watch cache, or by etcd
// itself with WatchFromEtcd.
func (s *Store) Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error) {
	if !s.cfg.Namespaced && opts.Namespace != "" {
		return nil, &storage.Error{Code: storage.CodeInvalidKey, Resource: s.cfg.Resource,
			Message: "Namespace parameter not allowed: " + s.cfg.Resource.String() + " is cluster-scoped."}
	}
	if _, err := storage.ListPrefix(s.cfg.Prefix, s.cfg.Resource, opts.Namespace); err != nil {
		return nil, err
	}
	if s.cfg.WatchFromEtcd {
		return s.watchEtcd(ctx, opts)
	}
	return s.cache.Watch(ctx, opts)
}

// read fetches key's current value with a linearizable read.
func (s *Store) read(ctx context.Context, key string) ([]*mvccpb.KeyValue, error) {
	resp, err := s.cfg.Client.Get(ctx, key)
	if err != nil {
		return nil, s.etcdError(err)
	}
	return resp.Kvs, nil
}

// current decodes the value a write is about to replace and checks the
// write's preconditions against it.
func (s *Store) current(k storage.Key, key string, kvs []*mvccpb.KeyValue, pre *storage.Preconditions) (runtime.Object, error) {
	if len(kvs) == 0 {
		return nil, s.notFound(k, key)
	}
	cur, err := s.decode(key, kvs[0].Value, kvs[0].ModRevision)
	if err != nil {
		return nil, err
	}
	return cur, s.checkPreconditions(k, key, pre, cur)
}

func (s *Store) checkPreconditions(k storage.Key, key string, pre *storage.Preconditions, cur runtime.Object) error {
	if pre == nil {
		return nil
	}
	m, err := meta.Accessor(cur)
	if err != nil {
		return err
	}
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return &storage.Error{Code: storage.CodeConflict, Resource: s.cfg.Resource, Name: k.Name, Key: key,
			Message: fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID())}
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return &storage.Error{Code: storage.CodeConflict, Resource: s.cfg.Resource, Name: k.Name, Key: key,
			Message: storage.ConflictMessage}
	}
	return nil
}

// encode prepares obj for etcd: the resourceVersion is never stored, since
// it is the key's ModRevision.
func (s *Store) encode(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion("")
	m.SetSelfLink("")
	data, err := s.cfg.Codec.Encode(obj)
	if err == nil && len(data) > storage.MaxObjectBytes {
		return nil, &storage.Error{Code: storage.CodeTooLarge, Resource: s.cfg.Resource, Name: m.GetName(),
			Message: fmt.Sprintf("the object is %d bytes once encoded; etcd takes at most %d", len(data), storage.MaxObjectBytes)}
	}
	return data, err
}

func (s *Store) decode(key string, data []byte, rev int64) (runtime.Object, error) {
	obj := s.cfg.NewFunc()
	if err := s.cfg.Codec.Decode(data, obj); err != nil {
		return nil, &storage.Error{Code: storage.CodeCorrupt, Resource: s.cfg.Resource, Key: key, Message: err.Error(), Err: err}
	}
	return obj, setResourceVersion(obj, rev)
}

func (s *Store) notFound(k storage.Key, key string) error {
	return &storage.Error{Code: storage.CodeNotFound, Resource: s.cfg.Resource, Name: k.Name, Key: key}
}

func (s *Store) etcdError(err error) error {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) {
		// An object just under MaxObjectBytes whose key and framing take the
		// request over etcd's limit.
		return &storage.Error{Code: storage.CodeTooLarge, Resource: s.cfg.Resource, Message: err.Error(), Err: err}
	}
	return &storage.Error{Code: storage.CodeUnavailable, Resource: s.cfg.Resource, Message: err.Error(), Err: err}
}

func setResourceVersion(obj runtime.Object, rev int64) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}
