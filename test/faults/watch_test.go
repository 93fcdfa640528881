package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// item is one thing a watch stream delivered.
type item struct {
	typ   watch.EventType
	key   string
	rv    int64
	value string
}

// segment is one watch request's stream: from its starting resourceVersion
// to its end. A client resumes from the last resourceVersion it received, so
// the segments of one watcher must join without a gap; after a 410 it lists
// again and the next segment starts from the list.
type segment struct {
	from  int64
	items []item
	gone  bool // ended in 410 Gone
}

// watcher is a client-go configmap watch, kept open as an informer keeps
// it: when the stream ends it watches again from the last resourceVersion
// it saw, however long the server takes to come back.
type watcher struct {
	mu       sync.Mutex
	segments []*segment
	errs     []string

	cancel context.CancelFunc
	done   chan struct{}
}

func startWatcher(client func() *kubernetes.Clientset, ns string, from int64) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := from
		for ctx.Err() == nil {
			// A short timeout, as informers' randomized ones, ends streams
			// often; 2 s before it the server sends a bookmark, if the
			// config maps moved since the watch began.
			timeout := int64(3 + rand.IntN(2))
			wi, err := client().CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
				ResourceVersion: strconv.FormatInt(last, 10), AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					last = w.relist(ctx, client(), ns)
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			seg := &segment{from: last}
			w.mu.Lock()
			w.segments = append(w.segments, seg)
			w.mu.Unlock()
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					if ctx.Err() != nil {
						break // the client stopped the watch
					}
					st := apierrors.FromObject(ev.Object)
					if apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
						w.mu.Lock()
						seg.gone = true
						w.mu.Unlock()
						last = w.relist(ctx, client(), ns)
					} else {
						w.errorf("watch from %d: error event %v", seg.from, st)
					}
					break
				}
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					w.errorf("watch event %s with a %T", ev.Type, ev.Object)
					continue
				}
				rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
				if err != nil {
					w.errorf("watch event %s: resourceVersion %q", ev.Type, cm.ResourceVersion)
					continue
				}
				w.mu.Lock()
				seg.items = append(seg.items, item{ev.Type, cm.Name, rv, cm.Data["v"]})
				w.mu.Unlock()
				if ev.Type != watch.Bookmark && torn(cm) {
					w.errorf("watch delivered %s@%d half-written: value %q, checksum %q", cm.Name, rv, cm.Data["v"], cm.Data["sum"])
				}
				last = rv
			}
			wi.Stop()
		}
	}()
	return w
}

// relist is what a client does after a 410: list, and watch from the list.
func (w *watcher) relist(ctx context.Context, c *kubernetes.Clientset, ns string) int64 {
	for ctx.Err() == nil {
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
			return rv
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0
}

func (w *watcher) errorf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// lastRV is the highest resourceVersion the watcher has received.
func (w *watcher) lastRV() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var rv int64
	for _, s := range w.segments {
		if n := len(s.items); n > 0 {
			rv = max(rv, s.items[n-1].rv)
		}
	}
	return rv
}

// watchReport counts what checkWatch found.
type watchReport struct {
	events, bookmarks, segments, gone int
	violations                        []string
}

// checkWatch checks a watcher's stream against etcd's history of the
// watched collection (in resourceVersion order): within and across segments,
// events come in increasing resourceVersion order, once each; each is the
// write etcd holds at that resourceVersion (type, name and value); none is
// missing between a segment's start and its last event or bookmark; and
// bookmarks never go backwards. A segment after a 410 starts anew.
func checkWatch(w *watcher, etcdHistory []applied) watchReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	var r watchReport
	r.violations = append(r.violations, w.errs...)
	var last int64 // where the client resumes: the highest resourceVersion delivered, events and bookmarks
	for si, s := range w.segments {
		r.segments++
		if si == 0 || w.segments[si-1].gone {
			// The first watch, and the one after a relist, start where the
			// client says: a watch that delivers nothing (a quiet resource
			// gets no bookmark, as in kube) leaves the client there.
			last = s.from
		}
		if si > 0 && s.from != last && !w.segments[si-1].gone {
			r.violations = append(r.violations, fmt.Sprintf("segment %d resumed from %d, not from the last resourceVersion received, %d", si, s.from, last))
		}
		if s.gone {
			r.gone++
		}
		// next is the first write of the history after the segment's start.
		next, _ := slices.BinarySearchFunc(etcdHistory, s.from+1, func(a applied, rv int64) int { return int(a.rv - rv) })
		for _, it := range s.items {
			if it.rv < last || (it.rv == last && it.typ != watch.Bookmark) {
				r.violations = append(r.violations, fmt.Sprintf("segment %d: %s %s@%d after resourceVersion %d: out of order or repeated", si, it.typ, it.key, it.rv, last))
			}
			last = max(last, it.rv)
			// Everything up to a bookmark, or before an event, must have come.
			for ; next < len(etcdHistory) && (etcdHistory[next].rv < it.rv || (it.typ == watch.Bookmark && etcdHistory[next].rv == it.rv)); next++ {
				a := etcdHistory[next]
				r.violations = append(r.violations, fmt.Sprintf("segment %d: gap: %s@%d never delivered (next came %s %s@%d)", si, a.key, a.rv, it.typ, it.key, it.rv))
			}
			if it.typ == watch.Bookmark {
				r.bookmarks++
				continue
			}
			r.events++
			if next >= len(etcdHistory) || etcdHistory[next].rv != it.rv {
				r.violations = append(r.violations, fmt.Sprintf("segment %d: %s %s@%d is no write in etcd's history", si, it.typ, it.key, it.rv))
				continue
			}
			a := etcdHistory[next]
			next++
			want := watch.Modified
			if a.created {
				want = watch.Added
			}
			if it.typ != want || it.key != a.key || it.value != a.value {
				r.violations = append(r.violations, fmt.Sprintf("segment %d: delivered %s %s@%d %q, etcd holds %s %s %q", si, it.typ, it.key, it.rv, it.value, want, a.key, a.value))
			}
		}
	}
	return r
}

// statusOrHang sends a request that must answer within d, with a Kubernetes
// Status when it fails: what a client gets must be an answer, not a hang.
func statusOrHang(c *http.Client, url string, d time.Duration) (code int, took time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}
