// Package storetest opens real etcd3 stores for the pipeline's tests: the
// same stores, codecs and keys the API server uses, over an embedded etcd.
package storetest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// Scheme knows the core and RBAC kinds, as the API server's does.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Kind describes one resource to store.
type Kind struct {
	GV         schema.GroupVersion
	Resource   string
	Namespaced bool
	New        func() runtime.Object
}

// Kinds the pipeline's tests store.
var (
	Namespaces          = Kind{corev1.SchemeGroupVersion, "namespaces", false, func() runtime.Object { return &corev1.Namespace{} }}
	ConfigMaps          = Kind{corev1.SchemeGroupVersion, "configmaps", true, func() runtime.Object { return &corev1.ConfigMap{} }}
	Roles               = Kind{rbacv1.SchemeGroupVersion, "roles", true, func() runtime.Object { return &rbacv1.Role{} }}
	RoleBindings        = Kind{rbacv1.SchemeGroupVersion, "rolebindings", true, func() runtime.Object { return &rbacv1.RoleBinding{} }}
	ClusterRoles        = Kind{rbacv1.SchemeGroupVersion, "clusterroles", false, func() runtime.Object { return &rbacv1.ClusterRole{} }}
	ClusterRoleBindings = Kind{rbacv1.SchemeGroupVersion, "clusterrolebindings", false, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }}
)

// Store opens k's store over client, stopped when the test ends, and
// waits until its watch cache has listed (the start of its window), as
// kube-apiserver is not ready before. cache may be nil for the defaults.
func Store(t testing.TB, client *clientv3.Client, k Kind, cache *watchcache.Config) *etcd3.Store {
	t.Helper()
	gr := schema.GroupResource{Group: k.GV.Group, Resource: k.Resource}
	cc := watchcache.Config{}
	if cache != nil {
		cc = *cache
	}
	cc.Logger = Quiet()
	s, err := etcd3.New(etcd3.Config{
		Client: client, Resource: gr, Namespaced: k.Namespaced,
		Prefix: storage.ResourcePrefix(gr, false), Codec: storage.NewProtobufCodec(Scheme, k.GV),
		NewFunc: k.New, Logger: Quiet(), Cache: cc,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	Eventually(t, "the watch cache listed", s.Cache().Initialized)
	return s
}

// Ctx is a context that ends with the test (or after 30s).
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Create writes obj, failing the test on error.
func Create(t testing.TB, s *etcd3.Store, obj runtime.Object) runtime.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Create(Ctx(t), storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()}, obj)
	if err != nil {
		t.Fatalf("create %s/%s: %v", m.GetNamespace(), m.GetName(), err)
	}
	return out
}

// Update replaces the stored object with obj.
func Update(t testing.TB, s *etcd3.Store, obj runtime.Object) runtime.Object {
	t.Helper()
	m, _ := meta.Accessor(obj)
	out, err := s.GuaranteedUpdate(Ctx(t), storage.Key{Namespace: m.GetNamespace(), Name: m.GetName()}, nil,
		func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
	if err != nil {
		t.Fatalf("update %s/%s: %v", m.GetNamespace(), m.GetName(), err)
	}
	return out
}

// Delete removes the object under ns/name.
func Delete(t testing.TB, s *etcd3.Store, ns, name string) {
	t.Helper()
	if _, err := s.Delete(Ctx(t), storage.Key{Namespace: ns, Name: name}, nil); err != nil {
		t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
}

// Eventually polls cond until it holds, failing the test after 10s: the
// pipeline's caches learn of writes through a watch, a moment later.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
