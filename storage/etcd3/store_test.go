package etcd3_test

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func TestCreateStoresWhatKubeAPIServerStores(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	pod := newPod("internals-demo", "ssa-demo", map[string]string{"app": "demo"})
	pod.ResourceVersion = "12345" // never stored: it is the key's ModRevision
	created := mustCreate(t, s, pod)

	resp, err := etcd.Client().Get(ctxT(t), "/registry/pods/internals-demo/ssa-demo")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get: %v, %d kvs", err, len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	if !bytes.HasPrefix(kv.Value, []byte("k8s\x00")) {
		t.Fatalf("value starts %q, want the k8s\\x00 prefix", kv.Value[:8])
	}
	// runtime.Unknown's TypeMeta: apiVersion "v1", kind "Pod", as etcdctl shows in the lesson.
	if !bytes.Contains(kv.Value[:20], []byte("\n\x02v1\x12\x03Pod")) {
		t.Fatalf("value does not name v1 Pod: %q", kv.Value[:20])
	}
	if bytes.Contains(kv.Value, []byte("12345")) {
		t.Fatal("resourceVersion was stored in the value")
	}
	if got := rvOf(t, created); got != kv.ModRevision {
		t.Fatalf("created resourceVersion %d, want ModRevision %d", got, kv.ModRevision)
	}
	got, err := s.Get(ctxT(t), storage.Key{Namespace: "internals-demo", Name: "ssa-demo"}, "")
	if err != nil {
		t.Fatal(err)
	}
	gp := got.(*corev1.Pod)
	if gp.Spec.Containers[0].Image != "nginx:1.27" || gp.Labels["app"] != "demo" || rvOf(t, gp) != kv.ModRevision {
		t.Fatalf("get returned %+v", gp)
	}
}

func TestCreateErrors(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("ns", "taken", nil))
	for name, tc := range map[string]struct {
		key    storage.Key
		code   storage.Code
		status int32
	}{
		"ErrAlreadyExists":  {storage.Key{Namespace: "ns", Name: "taken"}, storage.CodeAlreadyExists, 409},
		"ErrEmptyName":      {storage.Key{Namespace: "ns"}, storage.CodeInvalidKey, 400},
		"ErrSlashInName":    {storage.Key{Namespace: "ns", Name: "a/b"}, storage.CodeInvalidKey, 400},
		"ErrDotDotName":     {storage.Key{Namespace: "ns", Name: ".."}, storage.CodeInvalidKey, 400},
		"ErrNoNamespace":    {storage.Key{Name: "x"}, storage.CodeInvalidKey, 400},
		"ErrSlashNamespace": {storage.Key{Namespace: "../secrets", Name: "x"}, storage.CodeInvalidKey, 400},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Create(ctxT(t), tc.key, newPod(tc.key.Namespace, tc.key.Name, nil))
			if !storage.IsCode(err, tc.code) {
				t.Fatalf("err = %v, want code %d", err, tc.code)
			}
			if got := apierrors.APIStatus(err.(*storage.Error)).Status().Code; got != tc.status {
				t.Fatalf("status code %d, want %d", got, tc.status)
			}
		})
	}
	t.Run("message", func(t *testing.T) {
		_, err := s.Create(ctxT(t), storage.Key{Namespace: "ns", Name: "taken"}, newPod("ns", "taken", nil))
		if err.Error() != `pods "taken" already exists` || !apierrors.IsAlreadyExists(err) {
			t.Fatalf("err = %q", err)
		}
	})
	// Nothing was written by the failed creates.
	res, err := s.List(ctxT(t), storage.ListOptions{})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("list after failed creates: %v, %d items", err, len(res.Items))
	}
}

func TestGetNotFound(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	_, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: "nope"}, "")
	if !apierrors.IsNotFound(err) || err.Error() != `pods "nope" not found` {
		t.Fatalf("err = %v", err)
	}
	_, err = s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: "nope"}, "999999")
	if !apierrors.IsTimeout(err) || !storage.IsCode(err, storage.CodeTooLargeResourceVersion) {
		t.Fatalf("get at a future resourceVersion: %v", err)
	}
}

func TestGuaranteedUpdateRetriesOnConflict(t *testing.T) {
	s := newPodStore(t, storagetest.StartEtcd(t).Client())
	mustCreate(t, s, newPod("ns", "counter", nil))
	key := storage.Key{Namespace: "ns", Name: "counter"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				_, err := s.GuaranteedUpdate(ctxT(t), key, nil, func(cur runtime.Object) (runtime.Object, error) {
					pod := cur.(*corev1.Pod)
					n, _ := strconv.Atoi(pod.Annotations["count"])
					pod.Annotations = map[string]string{"count": strconv.Itoa(n + 1)}
					return pod, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctxT(t), key, "")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.(*corev1.Pod).Annotations["count"]; c != "80" {
		t.Fatalf("count = %s after 80 concurrent increments; an update was lost", c)
	}
}

func TestGuaranteedUpdatePreconditionsAndNoOps(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	created := mustCreate(t, s, newPod("ns", "p", nil))
	key := storage.Key{Namespace: "ns", Name: "p"}
	touch := func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Labels = map[string]string{"touched": "yes"}
		return cur, nil
	}
	t.Run("ErrStaleResourceVersion", func(t *testing.T) {
		stale := "1"
		_, err := s.GuaranteedUpdate(ctxT(t), key, &storage.Preconditions{ResourceVersion: &stale}, touch)
		if !apierrors.IsConflict(err) || err.Error() != `Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again` {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrWrongUID", func(t *testing.T) {
		uid := types.UID("someone-else")
		_, err := s.GuaranteedUpdate(ctxT(t), key, &storage.Preconditions{UID: &uid}, touch)
		if !apierrors.IsConflict(err) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := s.GuaranteedUpdate(ctxT(t), storage.Key{Namespace: "ns", Name: "gone"}, nil, touch)
		if !apierrors.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		rv := created.ResourceVersion
		out, err := s.GuaranteedUpdate(ctxT(t), key, &storage.Preconditions{ResourceVersion: &rv}, touch)
		if err != nil {
			t.Fatal(err)
		}
		if rvOf(t, out) <= rvOf(t, created) {
			t.Fatalf("resourceVersion did not advance: %s", out.(*corev1.Pod).ResourceVersion)
		}
	})
	t.Run("NoOpWritesNothing", func(t *testing.T) {
		before, _ := etcd.Client().Get(ctxT(t), "/registry/pods/ns/p")
		out, err := s.GuaranteedUpdate(ctxT(t), key, nil, touch)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := etcd.Client().Get(ctxT(t), "/registry/pods/ns/p")
		if after.Header.Revision != before.Header.Revision || rvOf(t, out) != before.Kvs[0].ModRevision {
			t.Fatalf("a no-op update wrote: revision %d → %d, rv %d", before.Header.Revision, after.Header.Revision, rvOf(t, out))
		}
	})
}

func TestDeleteReturnsLastState(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	mustCreate(t, s, newPod("ns", "p", map[string]string{"last": "state"}))
	key := storage.Key{Namespace: "ns", Name: "p"}
	wrong := types.UID("nope")
	if _, err := s.Delete(ctxT(t), key, &storage.Preconditions{UID: &wrong}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a wrong UID: %v", err)
	}
	uid := types.UID("uid-p")
	out, err := s.Delete(ctxT(t), key, &storage.Preconditions{UID: &uid})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := etcd.Client().Get(ctxT(t), "/registry/pods/ns/p")
	if len(resp.Kvs) != 0 {
		t.Fatal("object still in etcd")
	}
	if out.(*corev1.Pod).Labels["last"] != "state" || rvOf(t, out) != resp.Header.Revision {
		t.Fatalf("delete returned %+v at rv %s, want the last state at revision %d", out.(*corev1.Pod).Labels, out.(*corev1.Pod).ResourceVersion, resp.Header.Revision)
	}
	if _, err := s.Delete(ctxT(t), key, nil); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestCorruptValuesAreClearErrorsAndAffectNothingElse(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	mustCreate(t, s, newPod("ns", "fine", nil))
	good, _ := storage.NewProtobufCodec(scheme(), corev1.SchemeGroupVersion).Encode(newPod("ns", "x", nil))
	w, err := s.Watch(ctxT(t), storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next(t, w) // ADDED fine
	for name, value := range map[string][]byte{
		"json":      []byte(`{"kind":"Pod"}`),
		"truncated": good[:len(good)/2],
		"empty":     {},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := etcd.Client().Put(ctxT(t), "/registry/pods/ns/"+name, string(value)); err != nil {
				t.Fatal(err)
			}
			_, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: name}, "")
			if !storage.IsCode(err, storage.CodeCorrupt) || !apierrors.IsInternalError(err) {
				t.Fatalf("get corrupt value: %v", err)
			}
			if want := fmt.Sprintf("%q", "/registry/pods/ns/"+name); !bytes.Contains([]byte(err.Error()), []byte(want)) {
				t.Fatalf("error %q does not name the key", err)
			}
		})
	}
	if _, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: "fine"}, ""); err != nil {
		t.Fatalf("a good object next to corrupt ones: %v", err)
	}
	// The watch cache skipped the corrupt values and still delivers good ones.
	mustCreate(t, s, newPod("ns", "after", nil))
	if ev := next(t, w); describe(ev)[:11] != "ADDED after" {
		t.Fatalf("watch after corrupt values got %s", describe(ev))
	}
}
