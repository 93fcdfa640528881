package etcd3_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
	"github.com/kubelab/kubelab/storage/watchcache"
)

func relabel(t testing.TB, s *etcd3.Store, ns, name string, l map[string]string) *corev1.Pod {
	t.Helper()
	out, err := s.GuaranteedUpdate(ctxT(t), storage.Key{Namespace: ns, Name: name}, nil, func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Labels = l
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

func mustWatch(t testing.TB, s *etcd3.Store, opts storage.WatchOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(ctxT(t), opts)
	if err != nil {
		t.Fatalf("watch %+v: %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func expectNothing(t testing.TB, w watch.Interface, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s", describe(ev))
		}
	case <-time.After(d):
	}
}

// TestFreshWatchReplaysCurrentObjectsAsAdded is the lesson's
// `kubectl get pods --watch`: one ADDED per existing pod, then the live MODIFIED.
func TestFreshWatchReplaysCurrentObjectsAsAdded(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("internals-demo", "ssa-demo", nil))
	b := mustCreate(t, s, newPod("internals-demo", "web-86d8686cfb-84dk9", nil))
	mustCreate(t, s, newPod("other", "not-mine", nil))
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			a, err := s.Get(ctxT(t), storage.Key{Namespace: "internals-demo", Name: "ssa-demo"}, "")
			if err != nil {
				t.Fatal(err)
			}
			w := mustWatch(t, s, storage.WatchOptions{Namespace: "internals-demo", ResourceVersion: rv})
			for _, want := range []string{"ADDED ssa-demo " + a.(*corev1.Pod).ResourceVersion, "ADDED web-86d8686cfb-84dk9 " + b.ResourceVersion} {
				if got := describe(next(t, w)); got != want {
					t.Fatalf("got %q, want %q", got, want)
				}
			}
			mod := relabel(t, s, "internals-demo", "ssa-demo", map[string]string{"demo-round": rv + "one"})
			ev := next(t, w)
			if got := describe(ev); got != "MODIFIED ssa-demo "+mod.ResourceVersion {
				t.Fatalf("got %q", got)
			}
			if ev.Object.(*corev1.Pod).Labels["demo-round"] != rv+"one" {
				t.Fatal("MODIFIED does not carry the new state")
			}
		})
	}
}

func TestWatchFromResourceVersionDeliversOnlyLaterChangesInOrder(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("ns", "before", nil))
	from := relabel(t, s, "ns", "before", map[string]string{"x": "1"})
	var want []string
	c := mustCreate(t, s, newPod("ns", "after", nil))
	want = append(want, "ADDED after "+c.ResourceVersion)
	m := relabel(t, s, "ns", "before", map[string]string{"x": "2"})
	want = append(want, "MODIFIED before "+m.ResourceVersion)
	d, err := s.Delete(ctxT(t), storage.Key{Namespace: "ns", Name: "after"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "DELETED after "+d.(*corev1.Pod).ResourceVersion)

	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: from.ResourceVersion})
	for _, wnt := range want {
		ev := next(t, w)
		if got := describe(ev); got != wnt {
			t.Fatalf("got %q, want %q", got, wnt)
		}
		if ev.Type == watch.Deleted && ev.Object.(*corev1.Pod).Spec.Containers[0].Image != "nginx:1.27" {
			t.Fatal("DELETED does not carry the last state")
		}
	}
	expectNothing(t, w, 200*time.Millisecond)
}

func TestSendInitialEventsEndsWithAnnotatedBookmark(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("ns", "a", nil))
	last := mustCreate(t, s, newPod("ns", "b", nil))
	yes := true
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", SendInitialEvents: &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	next(t, w)
	next(t, w)
	bm := next(t, w)
	if bm.Type != watch.Bookmark {
		t.Fatalf("got %s, want the initial-events-end BOOKMARK", describe(bm))
	}
	m := bm.Object.(*corev1.Pod)
	if m.Annotations[watchcache.InitialEventsEndAnnotation] != "true" || rvOf(t, m) < rvOf(t, last) || m.Name != "" {
		t.Fatalf("bookmark %+v", m.ObjectMeta)
	}
	c := mustCreate(t, s, newPod("ns", "c", nil))
	if got := describe(next(t, w)); got != "ADDED c "+c.ResourceVersion {
		t.Fatalf("got %q", got)
	}
	// As in kube-apiserver 1.37, sendInitialEvents does not require
	// bookmarks; without them no bookmark ends the initial events.
	t.Run("OK without bookmarks", func(t *testing.T) {
		w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		for range 3 {
			if ev := next(t, w); ev.Type != watch.Added {
				t.Fatalf("got %s, want the initial ADDED events only", describe(ev))
			}
		}
		expectNothing(t, w, 200*time.Millisecond)
	})
}

// TestBookmarkBeforeDeadline: a watch that allows bookmarks, with a
// deadline, gets a BOOKMARK with only a resourceVersion 2 s before it ends,
// once its resource has moved past what the watch's start covered (here a
// write in another namespace, which the watch does not see).
func TestBookmarkBeforeDeadline(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("ns", "a", nil))
	start := time.Now()
	// The deadline leaves the write below several seconds to reach the
	// cache before the bookmark is due, on a loaded machine too.
	const deadline = 10 * time.Second
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", AllowWatchBookmarks: true, Deadline: start.Add(deadline)})
	next(t, w) // ADDED a
	// A write elsewhere still moves the clock the bookmark reports.
	other := mustCreate(t, s, newPod("elsewhere", "z", nil))
	bm := next(t, w)
	if bm.Type != watch.Bookmark {
		t.Fatalf("got %s, want BOOKMARK", describe(bm))
	}
	// Due from the start of its whole second, as kube's timer buckets are:
	// up to a second before the 2 s mark, never after the deadline.
	if el := time.Since(start); el < deadline-3*time.Second-100*time.Millisecond || el >= deadline {
		t.Fatalf("bookmark after %v, want about 2s before the %v deadline", el, deadline)
	}
	pod := bm.Object.(*corev1.Pod)
	if rvOf(t, pod) < rvOf(t, other) || pod.Name != "" || len(pod.Spec.Containers) != 0 {
		t.Fatalf("bookmark %+v, want only resourceVersion >= %s", pod, other.ResourceVersion)
	}
}

// TestNoBookmarkWithoutProgress: as kube-apiserver's cacheWatcher sends
// only what is newer than its start, a watch during which its resource did
// not move gets no BOOKMARK, not even before its deadline.
func TestNoBookmarkWithoutProgress(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	a := mustCreate(t, s, newPod("ns", "a", nil))
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: a.ResourceVersion,
		AllowWatchBookmarks: true, Deadline: time.Now().Add(4 * time.Second)})
	expectNothing(t, w, 3500*time.Millisecond)
}

// TestCompactionLeavesTheWindow: as in kube-apiserver, etcd's compaction
// does not move the watch cache's window. A watch from before the cache's
// list gets "too old resource version: X (list revision)", compacted or
// not, and one from inside the window is served from the cache although
// etcd no longer holds those revisions.
func TestCompactionLeavesTheWindow(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	first := mustCreate(t, newPodStore(t, etcd.Client()), newPod("ns", "before", nil))
	s := newPodStore(t, etcd.Client())
	listRev := windowStart(t, s)
	if listRev < rvOf(t, first) {
		t.Fatalf("window starts at %d, before the list (%s)", listRev, first.ResourceVersion)
	}
	var want []string
	for i := range 5 {
		p := mustCreate(t, s, newPod("ns", fmt.Sprintf("p%d", i), nil))
		want = append(want, "ADDED "+p.Name+" "+p.ResourceVersion)
	}
	if _, err := etcd3.NewCompactor(etcd.Client(), quietLogger()).CompactNow(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(listRev)})
	for _, wnt := range want {
		if got := describe(next(t, w)); got != wnt {
			t.Fatalf("after compaction, watch from the list's revision got %q, want %q", got, wnt)
		}
	}
	w = mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "1"})
	expectGone(t, w, fmt.Sprintf("too old resource version: 1 (%d)", listRev))
}

// windowStart is where s's watch cache window starts, once it has listed.
func windowStart(t testing.TB, s *etcd3.Store) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Cache().Initialized() {
		if time.Now().After(deadline) {
			t.Fatal("the watch cache did not list within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s.Cache().OldestResourceVersion()
}

// expectGone reads the one ERROR event of a watch refused with 410, and
// its end.
func expectGone(t testing.TB, w watch.Interface, want string) {
	t.Helper()
	ev := next(t, w)
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok {
		t.Fatalf("got %s, want ERROR", describe(ev))
	}
	if st.Message != want || st.Reason != metav1.StatusReasonExpired || st.Code != 410 || st.Status != metav1.StatusFailure {
		t.Fatalf("status %+v, want %q Expired 410", st, want)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("watch did not end after the ERROR")
	}
}

func TestSelectorTransitionsAreAddedAndDeleted(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("ns", "p", map[string]string{"tier": "web"}))
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0",
		Predicate: storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"tier": "web"})}})
	next(t, w)
	out := relabel(t, s, "ns", "p", map[string]string{"tier": "db"})
	ev := next(t, w)
	if describe(ev) != "DELETED p "+out.ResourceVersion || ev.Object.(*corev1.Pod).Labels["tier"] != "web" {
		t.Fatalf("leaving the selector: %s %v", describe(ev), ev.Object.(*corev1.Pod).Labels)
	}
	in := relabel(t, s, "ns", "p", map[string]string{"tier": "web"})
	if got := describe(next(t, w)); got != "ADDED p "+in.ResourceVersion {
		t.Fatalf("entering the selector: %s", got)
	}
}

// TestStalledWatcherDoesNotDelayOthers: one watcher that never reads is
// closed once its queue is full; the others get every event at once.
func TestStalledWatcherDoesNotDelayOthers(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client(), func(c *etcd3.Config) { c.Cache.WatcherBuffer = 10 })
	stalled := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	live := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	for i := range 40 {
		start := time.Now()
		c := mustCreate(t, s, newPod("ns", fmt.Sprintf("p%02d", i), nil))
		ev := next(t, live)
		if got := describe(ev); got != "ADDED "+c.Name+" "+c.ResourceVersion {
			t.Fatalf("live watcher got %q", got)
		}
		// A watcher held up by the stalled one would wait for ever; 10 s
		// is wide of a loaded machine (and the race detector).
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("event %d took %v to reach the live watcher", i, d)
		}
	}
	// The stalled watcher gets what fit in its queue (plus one in hand), then its end.
	got := 0
	for range stalled.ResultChan() {
		got++
	}
	if got == 0 || got > 12 {
		t.Fatalf("stalled watcher drained %d events, want its queue's worth", got)
	}
}

// TestWatcherThatReadsLateGetsEverything: more events than the result
// channel has room for (initial ones and later ones) wait for a watcher
// within its buffer, and arrive in order; Stop ends it even while some
// still wait.
func TestWatcherThatReadsLateGetsEverything(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client(), func(c *etcd3.Config) { c.Cache.WatcherBuffer = 80 })
	var want []string
	var last int64
	for i := range 40 {
		c := mustCreate(t, s, newPod("ns", fmt.Sprintf("a%02d", i), nil))
		want = append(want, "ADDED "+c.Name+" "+c.ResourceVersion)
		last, _ = strconv.ParseInt(c.ResourceVersion, 10, 64)
	}
	// A watch from "0" starts from what the cache holds now; let it hold
	// all 40, so that they are the watch's initial events and the 60 after
	// them fit its buffer of 80 (on a busy machine the cache can lag).
	for deadline := time.Now().Add(5 * time.Second); s.Cache().ResourceVersion() < last; {
		if time.Now().After(deadline) {
			t.Fatalf("the watch cache did not reach revision %d", last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	for i := range 60 {
		c := mustCreate(t, s, newPod("ns", fmt.Sprintf("b%02d", i), nil))
		want = append(want, "ADDED "+c.Name+" "+c.ResourceVersion)
	}
	for i, wanted := range want {
		if got := describe(next(t, w)); got != wanted {
			t.Fatalf("event %d: got %q, want %q", i, got, wanted)
		}
	}

	late := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	late.Stop()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-late.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch still open after Stop")
		}
	}
}

func TestStopEndsWatches(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns"})
	s.Stop()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("event after Stop")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch still open after Stop")
	}
}

func TestWatchTooLargeResourceVersion(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	start := time.Now()
	_, err := s.Watch(ctxT(t), storage.WatchOptions{ResourceVersion: "1000000"})
	if !storage.IsCode(err, storage.CodeTooLargeResourceVersion) || !strings.Contains(err.Error(), "Too large resource version: 1000000") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 6*time.Second {
		t.Fatal("waited too long")
	}
}

// TestCacheStartsAfterCompaction: a store started on a compacted etcd
// starts its window at its list (kube's behaviour), or, replaying etcd's
// history, at the compaction.
func TestCacheStartsAfterCompaction(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	first := newPodStore(t, etcd.Client())
	for i := range 5 {
		mustCreate(t, first, newPod("ns", fmt.Sprintf("p%d", i), nil))
	}
	rev, err := etcd3.NewCompactor(etcd.Client(), quietLogger()).CompactNow(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		replay bool
		oldest int64
	}{
		// CompactNow writes compact_rev_key first: etcd is one past rev.
		{"OK list", false, rev + 1},
		{"OK replay", true, rev - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newPodStore(t, etcd.Client(), func(c *etcd3.Config) { c.Cache.ReplayEtcdHistory = tc.replay })
			w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "1"})
			expectGone(t, w, fmt.Sprintf("too old resource version: 1 (%d)", tc.oldest))
			w = mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
			for range 5 {
				if ev := next(t, w); ev.Type != watch.Added {
					t.Fatalf("got %s", describe(ev))
				}
			}
		})
	}
}

// TestWatchAfterStopIsRefused: a client that reconnects at once while the
// server stops gets an error, not a watch nobody will ever close.
func TestWatchAfterStopIsRefused(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustWatch(t, s, storage.WatchOptions{Namespace: "ns"})
	s.Stop()
	if _, err := s.Watch(ctxT(t), storage.WatchOptions{Namespace: "ns"}); !storage.IsCode(err, storage.CodeUnavailable) {
		t.Fatalf("watch after Stop: %v", err)
	}
}
