package etcd3_test

import (
	"bytes"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// TestCustomResourcesAreStoredAsJSON: a custom resource lives under
// /registry/<group>/<resource>/ as plain JSON, readable with etcdctl beside
// a Pod's protobuf.
func TestCustomResourcesAreStoredAsJSON(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	gr := schema.GroupResource{Group: "lab.kubelab.io", Resource: "widgets"}
	s, err := etcd3.New(etcd3.Config{
		Client: etcd.Client(), Resource: gr, Namespaced: true,
		Prefix:  storage.ResourcePrefix(gr, true),
		Codec:   storage.JSONCodec{},
		NewFunc: func() runtime.Object { return &unstructured.Unstructured{} },
		Logger:  quietLogger(), Cache: watchcache.Config{Logger: quietLogger()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "lab.kubelab.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "ns", "resourceVersion": "77"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	created, err := s.Create(ctxT(t), storage.Key{Namespace: "ns", Name: "w1"}, obj)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Client().Get(ctxT(t), "/registry/lab.kubelab.io/widgets/ns/w1")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get: %v", err)
	}
	v := resp.Kvs[0].Value
	if !bytes.HasPrefix(v, []byte(`{"apiVersion":"lab.kubelab.io/v1","kind":"Widget"`)) || bytes.Contains(v, []byte("resourceVersion")) {
		t.Fatalf("stored %s", v)
	}
	if created.(*unstructured.Unstructured).GetResourceVersion() == "77" {
		t.Fatal("resourceVersion not set from etcd")
	}
	got, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: "w1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.(*unstructured.Unstructured).Object, "spec", "size"); size != 3 {
		t.Fatalf("got %v", got)
	}
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "w1" {
		t.Fatalf("got %v", ev)
	}
}

func TestNewRefusesKeysOutsideRegistry(t *testing.T) {
	client := storagetest.StartEtcd(t).Client()
	for _, prefix := range []string{"", "/registry", "/registry/", "/pods", "registry/pods", "/registry/pods/"} {
		_, err := etcd3.New(etcd3.Config{Client: client, Prefix: prefix, Codec: storage.JSONCodec{},
			NewFunc: func() runtime.Object { return &unstructured.Unstructured{} }})
		if err == nil {
			t.Errorf("prefix %q accepted", prefix)
		}
	}
}

// TestPeriodicBookmarks: a watch that allows bookmarks gets one about every
// BookmarkFrequency, each at a resourceVersion no older than the last.
func TestPeriodicBookmarks(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client(), func(c *etcd3.Config) { c.Cache.BookmarkFrequency = time.Second })
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", AllowWatchBookmarks: true})
	var last int64
	for i := range 3 {
		p := mustCreate(t, s, newPod("other", "p"+string(rune('a'+i)), nil))
		ev := next(t, w)
		if ev.Type != watch.Bookmark {
			t.Fatalf("got %s, want BOOKMARK", describe(ev))
		}
		rv := rvOf(t, ev.Object)
		if rv < last || rv < rvOf(t, p) {
			t.Fatalf("bookmark %d after %d, write at %d", rv, last, rvOf(t, p))
		}
		last = rv
	}
}
