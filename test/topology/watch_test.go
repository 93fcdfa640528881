package topology

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watchLog is a client-go pod watch through one server, kept open as a
// client keeps it: when the server ends the stream, it watches again from the
// last resourceVersion it received.
type watchLog struct {
	server string

	mu       sync.Mutex
	events   []event
	restarts int
	errs     []string

	cancel context.CancelFunc
	done   chan struct{}
}

func startWatch(t *testing.T, s *server, ns string, from int64) *watchLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchLog{server: s.Name, cancel: cancel, done: make(chan struct{})}
	t.Cleanup(w.stop)
	pods := s.Client.CoreV1().Pods(ns)
	go func() {
		defer close(w.done)
		last := from
		for ctx.Err() == nil {
			wi, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(last, 10)})
			if err != nil {
				if ctx.Err() == nil {
					w.errorf("watch from %d: %v", last, err)
					time.Sleep(200 * time.Millisecond)
				}
				continue
			}
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					w.errorf("watch from %d: error event: %v", last, apierrors.FromObject(ev.Object))
					break
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					w.errorf("watch event %s with a %T", ev.Type, ev.Object)
					continue
				}
				rv, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
				w.mu.Lock()
				w.events = append(w.events, event{ev.Type, p.Name, rv})
				w.mu.Unlock()
				last = rv
			}
			wi.Stop()
			if ctx.Err() == nil {
				w.mu.Lock()
				w.restarts++
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *watchLog) errorf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

func (w *watchLog) stop() {
	w.cancel()
	<-w.done
}

func (w *watchLog) snapshot() (events []event, restarts int, errs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event(nil), w.events...), w.restarts, append([]string(nil), w.errs...)
}

// check waits until the watch has delivered every acknowledged write, then
// checks it delivered them once each, in resourceVersion order, with the
// resourceVersions the writes returned. A watch may also deliver writes whose
// outcome the writer did not learn, but nothing else.
func (w *watchLog) check(t *testing.T, what string, l *ledger) {
	t.Helper()
	want := l.sorted()
	if len(want) == 0 {
		return
	}
	target := want[len(want)-1].rv
	deadline := time.Now().Add(wait)
	var got []event
	for {
		var restarts int
		var errs []string
		got, restarts, errs = w.snapshot()
		if len(got) > 0 && got[len(got)-1].rv >= target {
			if restarts > 0 || len(errs) > 0 {
				t.Logf("%s: the watch through %s was restarted %d time(s); errors: %q", what, w.server, restarts, errs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: the watch through %s did not reach resourceVersion %d within %s (%d events, restarts %d, errors %q)",
				what, w.server, target, wait, len(got), restarts, errs)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	byRV := map[int64]event{}
	for i, e := range got {
		if i > 0 && e.rv <= got[i-1].rv {
			t.Errorf("%s: the watch through %s delivered %s after %s: out of order or repeated", what, w.server, e, got[i-1])
		}
		byRV[e.rv] = e
	}
	acked := map[int64]bool{}
	for _, e := range want {
		acked[e.rv] = true
		if g, ok := byRV[e.rv]; !ok {
			t.Errorf("%s: the watch through %s never delivered the acknowledged %s; it delivered %s", what, w.server, e, around(got, e.rv))
		} else if g != e {
			t.Errorf("%s: the watch through %s delivered %s at the acknowledged %s's resourceVersion", what, w.server, g, e)
		}
	}
	for _, e := range got {
		if !acked[e.rv] && !l.isUncertain(e.name) && e.rv <= target {
			t.Errorf("%s: the watch through %s delivered %s, which no writer made", what, w.server, e)
		}
	}
}

// around describes the events delivered just before and after rv.
func around(got []event, rv int64) string {
	i, _ := slices.BinarySearchFunc(got, rv, func(e event, rv int64) int { return int(e.rv - rv) })
	lo, hi := max(i-2, 0), min(i+2, len(got))
	return fmt.Sprintf("%v (events %d to %d of %d)", got[lo:hi], lo, hi, len(got))
}
