package informer_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/pipeline/internal/storetest"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// state is a Handler that keeps configmaps' data by namespace/name.
type state struct {
	mu   sync.Mutex
	data map[string]string
}

func key(obj runtime.Object) string {
	cm := obj.(*corev1.ConfigMap)
	return cm.Namespace + "/" + cm.Name
}

func (s *state) Replace(objs []runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = map[string]string{}
	for _, o := range objs {
		s.data[key(o)] = o.(*corev1.ConfigMap).Data["v"]
	}
}

func (s *state) Upsert(obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key(obj)] = obj.(*corev1.ConfigMap).Data["v"]
}

func (s *state) Remove(obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data, key(obj))
}

func (s *state) snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.data)
}

func cm(ns, name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": v}}
}

// gated passes List and Watch through to a real store, except that Watch
// can be held back, so a test can make the informer fall behind.
type gated struct {
	*etcd3.Store
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gated) hold() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gated) release() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

func (g *gated) Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return g.Store.Watch(ctx, opts)
}

func start(t *testing.T, src informer.Source) (*informer.Informer, *state) {
	t.Helper()
	st := &state{data: map[string]string{}}
	inf := informer.New("configmaps", src, st, storetest.Quiet())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-inf.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("informer did not sync")
	}
	return inf, st
}

func expectState(t *testing.T, st *state, want map[string]string) {
	t.Helper()
	storetest.Eventually(t, "informer state", func() bool { return maps.Equal(st.snapshot(), want) })
}

func TestInformerListsThenFollowsTheWatch(t *testing.T) {
	s := storetest.Store(t, storagetest.StartEtcd(t).Client(), storetest.ConfigMaps, nil)
	storetest.Create(t, s, cm("a", "one", "1"))
	storetest.Create(t, s, cm("b", "two", "2"))
	inf, st := start(t, s)
	if got := st.snapshot(); !maps.Equal(got, map[string]string{"a/one": "1", "b/two": "2"}) {
		t.Fatalf("after sync: %v", got)
	}
	storetest.Create(t, s, cm("a", "three", "3"))
	storetest.Update(t, s, cm("a", "one", "1b"))
	storetest.Delete(t, s, "b", "two")
	expectState(t, st, map[string]string{"a/one": "1b", "a/three": "3"})
	if inf.Lists() != 1 {
		t.Fatalf("%d lists, want 1", inf.Lists())
	}
}

// TestInformerResumesAClosedWatch: the watch cache closes slow watchers;
// the informer must carry on from its last resourceVersion, with no gap
// and without listing again. (A slow watcher has had events: client-go's
// reflector takes a watch closed within a second with none for a broken
// server, and lists again.)
func TestInformerResumesAClosedWatch(t *testing.T) {
	s := storetest.Store(t, storagetest.StartEtcd(t).Client(), storetest.ConfigMaps, nil)
	inf, st := start(t, s)
	storetest.Create(t, s, cm("a", "one", "1"))
	expectState(t, st, map[string]string{"a/one": "1"})
	for i := range 3 {
		s.Cache().CloseWatchers()
		v := string(rune('2' + i))
		storetest.Update(t, s, cm("a", "one", v))
		expectState(t, st, map[string]string{"a/one": v})
	}
	storetest.Create(t, s, cm("a", "two", "x"))
	expectState(t, st, map[string]string{"a/one": "4", "a/two": "x"})
	if inf.Lists() != 1 {
		t.Fatalf("%d lists, want 1: a closed watch must resume, not relist", inf.Lists())
	}
}

// TestInformerRelistsAfter410: the informer's server restarts while the
// informer is away; its resume from before the restart gets 410 Gone (the
// new watch cache's window starts at its list, as kube-apiserver's does),
// and a new list brings it up to date, including a deletion it never saw
// as an event.
func TestInformerRelistsAfter410(t *testing.T) {
	client := storagetest.StartEtcd(t).Client()
	s := storetest.Store(t, client, storetest.ConfigMaps, nil)
	storetest.Create(t, s, cm("a", "gone", "0"))
	g := &gated{Store: s}
	inf, st := start(t, g)
	expectState(t, st, map[string]string{"a/gone": "0"})
	// Hold only once the informer's first watch is registered: a Watch
	// call already past the gate but not yet in the cache would miss
	// CloseWatchers and see the deletion live, with no 410 to relist on.
	storetest.Eventually(t, "the informer's watch registered", func() bool { return s.Cache().Stats().Watchers == 1 })

	g.hold()
	s.Cache().CloseWatchers()
	storetest.Delete(t, s, "a", "gone")
	storetest.Create(t, s, cm("a", "new", "1"))
	s.Stop()
	// The informer waits at the gate, so it sees only the restarted store.
	s = storetest.Store(t, client, storetest.ConfigMaps, nil)
	g.Store = s
	g.release()
	expectState(t, st, map[string]string{"a/new": "1"})
	if inf.Lists() != 2 {
		t.Fatalf("%d lists, want 2 (start and after 410)", inf.Lists())
	}
	storetest.Create(t, s, cm("a", "after", "2"))
	expectState(t, st, map[string]string{"a/new": "1", "a/after": "2"})
	if keys := slices.Sorted(maps.Keys(st.snapshot())); len(keys) != 2 {
		t.Fatalf("state %v", keys)
	}
}
