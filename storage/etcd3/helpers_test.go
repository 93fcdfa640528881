package etcd3_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/watchcache"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newPodStore stores pods the way kube-apiserver does, over client.
func newPodStore(t testing.TB, client *clientv3.Client, tune ...func(*etcd3.Config)) *etcd3.Store {
	t.Helper()
	cfg := etcd3.Config{
		Client:     client,
		Resource:   podsGR,
		Namespaced: true,
		Prefix:     storage.ResourcePrefix(podsGR, false),
		Codec:      storage.NewProtobufCodec(scheme(), corev1.SchemeGroupVersion),
		NewFunc:    func() runtime.Object { return &corev1.Pod{} },
		Attrs:      podAttrs,
		Logger:     quietLogger(),
		Cache:      watchcache.Config{Logger: quietLogger()},
	}
	for _, f := range tune {
		f(&cfg)
	}
	s, err := etcd3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	// Like kube-apiserver, which is not ready before its watch caches are,
	// a test writes only once the cache has listed: the window starts at
	// that list, and a write before it would be outside.
	windowStart(t, s)
	return s
}

// podAttrs adds the pod fields kube-apiserver lets selectors match.
func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod := obj.(*corev1.Pod)
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
		"status.phase":       string(pod.Status.Phase),
	}, nil
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func rvOf(t testing.TB, obj runtime.Object) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(obj.(metav1.Object).GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion of %T: %v", obj, err)
	}
	return rv
}

func mustCreate(t testing.TB, s *etcd3.Store, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := s.Create(ctxT(t), storage.Key{Namespace: pod.Namespace, Name: pod.Name}, pod)
	if err != nil {
		t.Fatalf("create %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return out.(*corev1.Pod)
}

// next waits for the next event of w.
func next(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed, want an event")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

// describe is an event as "TYPE name rv", for comparing streams.
func describe(ev watch.Event) string {
	m, ok := ev.Object.(metav1.Object)
	if !ok {
		return string(ev.Type)
	}
	return string(ev.Type) + " " + m.GetName() + " " + m.GetResourceVersion()
}
