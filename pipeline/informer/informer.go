// Package informer keeps an in-memory copy of one resource with client-go's
// Reflector, over kubelab's storage instead of HTTP: it syncs (a streaming
// list, or a list where the source cannot stream), then watches from the
// sync's resourceVersion, resumes a closed watch from the last
// resourceVersion seen, and syncs again when that version has been
// compacted away (410). The pipeline's caches (RBAC, namespaces) read
// memory, never etcd, per request.
package informer

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

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

// backoff bounds how fast a failing sync or watch is retried: quicker than
// client-go's default (800 ms to 30 s), since the source is in process.
var backoff = wait.Backoff{Duration: 100 * time.Millisecond, Cap: 5 * time.Second, Factor: 2, Jitter: 0.1, Steps: 100}

// Informer feeds a Handler from a Source until its context ends.
type Informer struct {
	h         Handler
	log       logr.Logger
	reflector *cache.Reflector

	synced   chan struct{}
	syncOnce sync.Once
	syncs    atomic.Int64
}

// New returns an informer; name is for logs. Run starts it.
func New(name string, src Source, h Handler, log *slog.Logger) *Informer {
	if log == nil {
		log = slog.Default()
	}
	i := &Informer{h: h, log: logr.FromSlogHandler(log.Handler()).WithValues("resource", name), synced: make(chan struct{})}
	lw := listWatch{src}
	i.reflector = cache.NewReflectorWithOptions(&cache.ListWatch{ListWithContextFunc: lw.list, WatchFuncWithContext: lw.watch}, nil, store{i}, cache.ReflectorOptions{
		Name: name, TypeDescription: name, Logger: &i.log, Backoff: &backoff,
	})
	return i
}

// Synced is closed once the first list has been handed to the Handler.
func (i *Informer) Synced() <-chan struct{} { return i.synced }

// ResourceVersion is the last resourceVersion the Handler has seen.
func (i *Informer) ResourceVersion() string { return i.reflector.LastSyncResourceVersion() }

// Lists counts the complete syncs (Replace) so far: one at start, one per
// 410.
func (i *Informer) Lists() int64 { return i.syncs.Load() }

// Run lists and watches until ctx ends.
func (i *Informer) Run(ctx context.Context) {
	// The reflector logs through the context's logger too.
	i.reflector.RunWithContext(klog.NewContext(ctx, i.log))
}

// store is the reflector's view of the Handler. The reflector calls it from
// one goroutine, in order.
type store struct{ i *Informer }

func (s store) Add(obj any) error    { s.i.h.Upsert(obj.(runtime.Object)); return nil }
func (s store) Update(obj any) error { s.i.h.Upsert(obj.(runtime.Object)); return nil }
func (s store) Delete(obj any) error { s.i.h.Remove(obj.(runtime.Object)); return nil }
func (s store) Resync() error        { return nil }

func (s store) Replace(items []any, _ string) error {
	objs := make([]runtime.Object, len(items))
	for n, item := range items {
		objs[n] = item.(runtime.Object)
	}
	s.i.h.Replace(objs)
	s.i.syncs.Add(1)
	s.i.syncOnce.Do(func() { close(s.i.synced) })
	return nil
}

// listWatch is the reflector's list and watch over a Source: what
// client-go would ask of the API server over HTTP, asked of storage in
// process.
type listWatch struct{ src Source }

// list reads every object at once: a server may ignore a page
// size, and storage's lists are the API's.
func (lw listWatch) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	res, err := lw.src.List(ctx, storage.ListOptions{ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch})
	if err != nil {
		return nil, err
	}
	list := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: itoa(res.ResourceVersion)}, Items: make([]runtime.RawExtension, len(res.Items))}
	for n, obj := range res.Items {
		list.Items[n].Object = obj
	}
	return list, nil
}

// watch watches as the API's watch would with the same options:
// storage's errors are already Kubernetes Statuses (a 410 among them).
func (lw listWatch) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := storage.WatchOptions{
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch,
		SendInitialEvents: opts.SendInitialEvents, AllowWatchBookmarks: opts.AllowWatchBookmarks,
	}
	if opts.TimeoutSeconds != nil {
		w.Deadline = time.Now().Add(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return lw.src.Watch(ctx, w)
}

// itoa is a list's revision as a resourceVersion; 0 (no read) is "".
func itoa(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
