package registry

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// WatchObserver is told what a watch made with its context sends: each
// event as the store hands it on, in whatever format the client then
// encodes it (JSON, protobuf, a Table), a watch refused before it
// started, and the watch's end. The labs follow a student's own watches
// this way.
type WatchObserver interface {
	// Event is one event about to be sent; it must not change ev.Object,
	// which the watch cache shares with every watcher.
	Event(ev watch.Event)
	// Refused is a watch the storage refused before it started (its
	// error is a Kubernetes Status).
	Refused(err error)
	// Done is the watch's end, however it ended.
	Done()
}

type observerKey struct{}

// WithWatchObserver tells o about every watch made with ctx.
func WithWatchObserver(ctx context.Context, o WatchObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// observe hands a watch (or its refusal) to ctx's observer, if any.
func observe(ctx context.Context, w watch.Interface, err error) (watch.Interface, error) {
	o, ok := ctx.Value(observerKey{}).(WatchObserver)
	if !ok {
		return w, err
	}
	if err != nil {
		o.Refused(err)
		o.Done()
		return nil, err
	}
	ow := &observedWatch{in: w, out: make(chan watch.Event, observedBuffer), stop: make(chan struct{})}
	go ow.run(o)
	return ow, nil
}

// observedBuffer lets the consumer batch what is queued, as it does with
// the watch cache's own channel.
const observedBuffer = 16

// observedWatch passes a watch's events on, telling its observer of each.
// A goroutine per watch is the price; only observed watches pay it.
type observedWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *observedWatch) run(o WatchObserver) {
	defer close(w.out)
	defer o.Done()
	for {
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			o.Event(ev)
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}

func (w *observedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *observedWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}
