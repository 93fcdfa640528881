package etcd3

import (
	"context"
	"errors"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// watchTooOld is kube-apiserver's message for a watch that etcd refuses
// because its revision was compacted (etcd3/errors.go, interpretWatchError):
// what a client sees with --watch-cache=false, instead of the watch
// cache's "too old resource version: X (Y)".
const watchTooOld = "The resourceVersion for the provided watch is too old."

// etcdWatchBuffer is kube's outgoingBufSize for a watch served from etcd.
const etcdWatchBuffer = 100

// etcdWatch is one client's watch served by an etcd watch of its own, as
// kube-apiserver's etcd3 watcher serves it when the watch cache is off.
type etcdWatch struct {
	store  *Store
	opts   storage.WatchOptions
	prefix string
	out    chan watch.Event
	cancel context.CancelFunc
}

// watchEtcd starts a watch read from etcd: from the revision after rv, or,
// for rv 0, after a list whose objects it sends first as ADDED (with
// sendInitialEvents=false, from etcd's current revision instead).
func (s *Store) watchEtcd(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error) {
	rv, err := storage.ValidateWatch(opts)
	if err != nil {
		return nil, err
	}
	prefix, err := storage.ListPrefix(s.cfg.Prefix, s.cfg.Resource, opts.Namespace)
	if err != nil {
		return nil, err
	}
	initial := (opts.SendInitialEvents == nil && rv == 0) || (opts.SendInitialEvents != nil && *opts.SendInitialEvents)
	if rv == 0 && !initial {
		resp, err := s.cfg.Client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return nil, s.etcdError(err)
		}
		rv = resp.Header.Revision
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &etcdWatch{store: s, opts: opts, prefix: prefix, out: make(chan watch.Event, etcdWatchBuffer), cancel: cancel}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		cancel()
		return nil, &storage.Error{Code: storage.CodeUnavailable, Resource: s.cfg.Resource, Message: "the store of " + s.cfg.Resource.String() + " is stopping"}
	}
	s.etcdWatches[w] = struct{}{}
	go w.run(wctx, rv, initial)
	return w, nil
}

// ResultChan implements watch.Interface.
func (w *etcdWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop implements watch.Interface.
func (w *etcdWatch) Stop() { w.cancel() }

// forget ends the etcd watch and drops it from the store's open watches.
func (w *etcdWatch) forget() {
	w.cancel()
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	delete(w.store.etcdWatches, w)
}

func (w *etcdWatch) run(ctx context.Context, rev int64, initial bool) {
	defer close(w.out)
	defer w.forget()
	if initial {
		listed, err := w.sendState(ctx, rev)
		if err != nil {
			w.sendError(ctx, err)
			return
		}
		rev = listed
		if w.opts.SendInitialEvents != nil && w.opts.AllowWatchBookmarks {
			w.send(ctx, w.bookmark(rev, true))
		}
	}
	wch := w.store.cfg.Client.Watch(clientv3.WithRequireLeader(ctx), w.prefix,
		clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	for resp := range wch {
		if err := resp.Err(); err != nil {
			w.sendError(ctx, err)
			return
		}
		if resp.IsProgressNotify() {
			if w.opts.AllowWatchBookmarks {
				w.send(ctx, w.bookmark(resp.Header.Revision, false))
			}
			continue
		}
		for _, ev := range resp.Events {
			e, ok, err := w.convert(ev)
			if err != nil {
				w.sendError(ctx, err)
				return
			}
			if ok && !w.send(ctx, e) {
				return
			}
		}
	}
}

// sendState lists the selected objects at etcd's latest revision and
// sends each as ADDED; it returns the list's revision. As in kube's etcd3
// watcher, a resourceVersion only bounds the list from below.
func (w *etcdWatch) sendState(ctx context.Context, rev int64) (int64, error) {
	opts := storage.ListOptions{Namespace: w.opts.Namespace, Predicate: w.opts.Predicate}
	if rev > 0 {
		opts.ResourceVersion = strconv.FormatInt(rev, 10)
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	for {
		page, err := w.store.List(ctx, opts)
		if err != nil {
			return 0, err
		}
		for _, obj := range page.Items {
			if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
				return 0, ctx.Err()
			}
		}
		if page.Continue == "" {
			return page.ResourceVersion, nil
		}
		opts.Continue = page.Continue
	}
}

// convert follows kube's etcd3 watcher: an object entering the selector
// is ADDED, one leaving it DELETED (its last state at the event's revision).
func (w *etcdWatch) convert(ev *clientv3.Event) (watch.Event, bool, error) {
	key := string(ev.Kv.Key)
	var cur, prev runtime.Object
	var err error
	if ev.Type != mvccpb.DELETE {
		if cur, err = w.selected(key, ev.Kv.Value, ev.Kv.ModRevision); err != nil {
			return watch.Event{}, false, err
		}
	}
	if ev.PrevKv != nil && !ev.IsCreate() {
		if prev, err = w.selected(key, ev.PrevKv.Value, ev.Kv.ModRevision); err != nil {
			return watch.Event{}, false, err
		}
	}
	switch {
	case cur != nil && prev != nil:
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	case cur != nil:
		return watch.Event{Type: watch.Added, Object: cur}, true, nil
	case prev != nil:
		return watch.Event{Type: watch.Deleted, Object: prev}, true, nil
	}
	return watch.Event{}, false, nil
}

// selected decodes value with resourceVersion rev; nil if the watch's
// selector does not select it.
func (w *etcdWatch) selected(key string, value []byte, rev int64) (runtime.Object, error) {
	obj, err := w.store.decode(key, value, rev)
	if err != nil {
		return nil, err
	}
	l, f, err := w.store.cfg.Attrs(obj)
	if err != nil {
		return nil, err
	}
	if !w.opts.Predicate.Matches(l, f) {
		return nil, nil
	}
	return obj, nil
}

func (w *etcdWatch) bookmark(rev int64, initialEventsEnd bool) watch.Event {
	obj := w.store.cfg.NewFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEventsEnd {
			m.SetAnnotations(map[string]string{watchcache.InitialEventsEndAnnotation: "true"})
		}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

func (w *etcdWatch) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// sendError ends the watch with an ERROR event carrying kube's Status for
// err; a watch stopped by its client ends without one.
func (w *etcdWatch) sendError(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	var st metav1.Status
	var serr *storage.Error
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		st = apierrors.NewResourceExpired(watchTooOld).ErrStatus
	case errors.As(err, &serr):
		st = serr.Status()
	default:
		st = apierrors.NewInternalError(err).ErrStatus
	}
	w.send(ctx, watch.Event{Type: watch.Error, Object: &st})
}
