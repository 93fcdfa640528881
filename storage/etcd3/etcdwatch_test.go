package etcd3_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
	"github.com/kubelab/kubelab/storage/watchcache"
)

func fromEtcd(c *etcd3.Config) { c.WatchFromEtcd = true }

// TestWatchFromEtcdAfterCompaction is --watch-cache=false: a watch reads
// etcd, so a compacted revision gets etcd's 410 with kube-apiserver's
// message for it, and the compaction revision itself still works.
func TestWatchFromEtcdAfterCompaction(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client(), fromEtcd)
	for i := range 3 {
		mustCreate(t, s, newPod("ns", fmt.Sprintf("p%d", i), nil))
	}
	rev, err := etcd3.NewCompactor(etcd.Client(), quietLogger()).CompactNow(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	expectGone(t, mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "1"}),
		"The resourceVersion for the provided watch is too old.")
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(rev - 1)})
	c := mustCreate(t, s, newPod("ns", "new", nil))
	for _, want := range []string{fmt.Sprintf("ADDED p2 %d", rev), "ADDED new " + c.ResourceVersion} {
		if got := describe(next(t, w)); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// TestWatchFromEtcdStreams: the events of a watch served from etcd are
// those the watch cache gives: current objects for "0", later changes,
// selector transitions, the last state on DELETED, and the initial-events
// BOOKMARK.
func TestWatchFromEtcdStreams(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client(), fromEtcd)
	mustCreate(t, s, newPod("ns", "a", map[string]string{"tier": "web"}))
	mustCreate(t, s, newPod("other", "x", map[string]string{"tier": "web"}))
	web := storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"tier": "web"})}
	yes := true
	legacy := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0", Predicate: web})
	initial := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", SendInitialEvents: &yes, Predicate: web,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	for _, w := range []watch.Interface{legacy, initial} {
		if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "a" {
			t.Fatalf("first event %s, want ADDED a", describe(ev))
		}
	}
	bm := next(t, initial)
	if bm.Type != watch.Bookmark || bm.Object.(*corev1.Pod).Annotations[watchcache.InitialEventsEndAnnotation] != "true" {
		t.Fatalf("got %s, want the initial-events-end BOOKMARK", describe(bm))
	}
	out := relabel(t, s, "ns", "a", map[string]string{"tier": "db"})
	in := relabel(t, s, "ns", "a", map[string]string{"tier": "web"})
	d, err := s.Delete(ctxT(t), storage.Key{Namespace: "ns", Name: "a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DELETED a " + out.ResourceVersion, "ADDED a " + in.ResourceVersion, "DELETED a " + d.(*corev1.Pod).ResourceVersion}
	for _, w := range []watch.Interface{legacy, initial} {
		for i, wnt := range want {
			ev := next(t, w)
			if got := describe(ev); got != wnt {
				t.Fatalf("got %q, want %q", got, wnt)
			}
			if i == 0 && ev.Object.(*corev1.Pod).Labels["tier"] != "web" {
				t.Fatal("a pod leaving the selector is DELETED with its last selected state")
			}
		}
		expectNothing(t, w, 100*time.Millisecond)
	}
	legacy.Stop()
	if _, ok := <-legacy.ResultChan(); ok {
		t.Fatal("Stop did not end the watch")
	}
	s.CloseWatchers()
	if _, ok := <-initial.ResultChan(); ok {
		t.Fatal("CloseWatchers did not end the watch")
	}
	s.Stop()
	if _, err := s.Watch(ctxT(t), storage.WatchOptions{Namespace: "ns"}); !storage.IsCode(err, storage.CodeUnavailable) {
		t.Fatalf("watch after Stop: %v", err)
	}
}
