// Package informer keeps an in-memory copy of one resource, the way
// client-go's reflector does: list, then watch from the list's
// resourceVersion; resume a closed watch from the last resourceVersion
// seen; list again when that version has been compacted away (410).
// The pipeline's caches (RBAC, namespaces) read memory, never etcd, per
// request.
package informer

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
)

// Source lists and watches one resource; *etcd3.Store is one.
type Source interface {
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error)
}

// Handler receives the resource's state. Its methods are called from one
// goroutine, in order. Objects may be shared with other watchers and must
// not be modified.
type Handler interface {
	// Replace sets the complete state, after a list.
	Replace(objs []runtime.Object)
	// Upsert records an added or modified object.
	Upsert(obj runtime.Object)
	// Remove records a deleted object.
	Remove(obj runtime.Object)
}

// Backoff bounds how fast a failing list or watch is retried.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Informer feeds a Handler from a Source until its context ends.
type Informer struct {
	name string
	src  Source
	h    Handler
	log  *slog.Logger

	synced   chan struct{}
	syncOnce sync.Once

	mu sync.Mutex
	rv string

	lists atomic.Int64
}

// New returns an informer; name is for logs. Run starts it.
func New(name string, src Source, h Handler, log *slog.Logger) *Informer {
	if log == nil {
		log = slog.Default()
	}
	return &Informer{name: name, src: src, h: h, log: log, synced: make(chan struct{})}
}

// Synced is closed once the first list has been handed to the Handler.
func (i *Informer) Synced() <-chan struct{} { return i.synced }

// ResourceVersion is the last resourceVersion the Handler has seen.
func (i *Informer) ResourceVersion() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rv
}

// Lists counts the lists done so far: one at start, one per 410.
func (i *Informer) Lists() int64 { return i.lists.Load() }

func (i *Informer) setRV(rv string) {
	i.mu.Lock()
	i.rv = rv
	i.mu.Unlock()
}

// Run lists and watches until ctx ends.
func (i *Informer) Run(ctx context.Context) {
	b := backoff{}
	for ctx.Err() == nil {
		if err := i.list(ctx); err != nil {
			if ctx.Err() == nil {
				i.log.Warn("informer list failed", "resource", i.name, "err", err)
			}
			b.wait(ctx)
			continue
		}
		b.reset()
		i.watch(ctx)
	}
}

func (i *Informer) list(ctx context.Context) error {
	res, err := i.src.List(ctx, storage.ListOptions{})
	if err != nil {
		return err
	}
	i.lists.Add(1)
	i.h.Replace(res.Items)
	i.setRV(itoa(res.ResourceVersion))
	i.syncOnce.Do(func() { close(i.synced) })
	return nil
}

// watch follows the resource from the last resourceVersion, resuming
// closed watches, and returns when a new list is needed (410) or ctx ends.
func (i *Informer) watch(ctx context.Context) {
	b := backoff{}
	for ctx.Err() == nil {
		w, err := i.src.Watch(ctx, storage.WatchOptions{ResourceVersion: i.ResourceVersion(), AllowWatchBookmarks: true})
		if err != nil {
			if expired(err) {
				return
			}
			if ctx.Err() == nil {
				i.log.Warn("informer watch failed", "resource", i.name, "err", err)
			}
			b.wait(ctx)
			continue
		}
		gone, progressed := i.consume(ctx, w)
		w.Stop()
		if gone {
			i.log.Info("informer relisting after 410", "resource", i.name)
			return
		}
		if progressed {
			b.reset()
		} else {
			b.wait(ctx) // a watch that closes at once must not spin
		}
	}
}

// consume hands w's events to the Handler until w closes. It reports
// whether the watch ended with 410 and whether any event arrived.
func (i *Informer) consume(ctx context.Context, w watch.Interface) (gone, progressed bool) {
	for {
		select {
		case <-ctx.Done():
			return false, progressed
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, progressed
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				i.h.Upsert(ev.Object)
			case watch.Deleted:
				i.h.Remove(ev.Object)
			case watch.Bookmark:
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if expired(err) {
					return true, progressed
				}
				i.log.Warn("informer watch error", "resource", i.name, "err", err)
				return false, progressed
			}
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				i.setRV(m.GetResourceVersion())
			}
			progressed = true
		}
	}
}

// expired is the 410 that says a resourceVersion is no longer servable.
func expired(err error) bool {
	if storage.IsCode(err, storage.CodeExpired) {
		return true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return s.Code == 410 || s.Reason == metav1.StatusReasonExpired || s.Reason == metav1.StatusReasonGone
	}
	return false
}

type backoff struct{ d time.Duration }

func (b *backoff) reset() { b.d = 0 }

func (b *backoff) wait(ctx context.Context) {
	b.d = min(max(2*b.d, minBackoff), maxBackoff)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// itoa is a list's revision as a resourceVersion; 0 (no read) is "".
func itoa(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
