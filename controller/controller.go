// Package controller runs kubelab's controllers the way kube's run: an
// informer feeds object keys into a rate-limited work queue, and one worker
// reconciles a key at a time from the object's current state, retrying a
// failure with backoff. A key queued twice is reconciled once.
package controller

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubelab/kubelab/pipeline/informer"
)

// SyncFunc brings one key's world in line with its object; an error
// queues the key again, later.
type SyncFunc func(ctx context.Context, key string) error

// Loop is one controller's queue and worker.
type Loop struct {
	name  string
	sync  SyncFunc
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[string]
}

// New returns a loop named name (for logs and the queue) around sync.
func New(name string, sync SyncFunc, log *slog.Logger) *Loop {
	if log == nil {
		log = slog.Default()
	}
	return &Loop{
		name: name, sync: sync, log: log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}
}

// Enqueue asks for key to be reconciled.
func (l *Loop) Enqueue(key string) { l.queue.Add(key) }

// Run reconciles keys until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	shutDown := make(chan struct{})
	defer func() { <-shutDown }()
	go func() {
		defer close(shutDown)
		<-ctx.Done()
		l.queue.ShutDown()
	}()
	for {
		key, quit := l.queue.Get()
		if quit {
			return
		}
		if err := l.sync(ctx, key); err != nil && ctx.Err() == nil {
			l.log.Warn("controller will retry", "controller", l.name, "key", key, "err", err)
			l.queue.AddRateLimited(key)
		} else {
			l.queue.Forget(key)
		}
		l.queue.Done(key)
	}
}

// KeyFunc says which key, if any, an object's change should queue.
type KeyFunc func(obj runtime.Object) (key string, ok bool)

// Feed returns an informer over src that queues on l the key of every
// object it lists, adds, changes or removes. Run it beside l.
func Feed(name string, src informer.Source, keyOf KeyFunc, l *Loop) *informer.Informer {
	return informer.New(name, src, feeder{keyOf: keyOf, loop: l}, l.log)
}

type feeder struct {
	keyOf KeyFunc
	loop  *Loop
}

func (f feeder) Replace(objs []runtime.Object) {
	for _, o := range objs {
		f.Upsert(o)
	}
}

func (f feeder) Upsert(obj runtime.Object) {
	if key, ok := f.keyOf(obj); ok {
		f.loop.Enqueue(key)
	}
}

func (f feeder) Remove(obj runtime.Object) { f.Upsert(obj) }

// FieldManager is the manager kube-controller-manager's writes record in
// managedFields.
const FieldManager = "kube-controller-manager"
