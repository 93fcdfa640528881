// Package registrytest gives tests a registry of the built-in kinds over
// a real embedded etcd: the one write path without the HTTP API, the web
// UI or the controllers a whole kubelab runs. A test of one controller
// runs that controller alone against it.
package registrytest

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// Start opens a registry of every built-in resource on a fresh etcd,
// stopped when the test ends, once its watch caches have read etcd. It
// has no pipeline: every call is allowed and admitted, and none is
// traced, until the test sets one.
func Start(t testing.TB) *registry.Registry {
	t.Helper()
	return On(t, storagetest.StartEtcd(t).Client())
}

// On is Start on an etcd the test holds too (to read what else kubelab
// keeps there, as its CA).
func On(t testing.TB, client *clientv3.Client) *registry.Registry {
	t.Helper()
	reg, err := registry.New(registry.Config{Client: client, Resources: registry.BuiltinResources()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	Initialized(t, reg)
	return reg
}

// Initialized returns once every watch cache of reg has read etcd, as a
// server is ready before it serves: a write before that is outside the
// cache's window, and a watch from its resourceVersion gets a 410.
func Initialized(t testing.TB, reg *registry.Registry) {
	t.Helper()
	eventually.Holds(t, "every watch cache initialized", func() (bool, error) {
		for _, st := range reg.Stores() {
			es, ok := reg.Storage(st.Resource.GroupVersionResource())
			if ok && !es.Cache().Initialized() {
				return false, fmt.Errorf("%s not yet", st.GroupResource())
			}
		}
		return true, nil
	})
}

// Store is the store of a served resource; one not served ends the test.
func Store(t testing.TB, reg *registry.Registry, gvr schema.GroupVersionResource) *registry.Store {
	t.Helper()
	s, ok := reg.Store(gvr)
	if !ok {
		t.Fatalf("%s is not served", gvr)
	}
	return s
}

// Core is the store of a resource of the core group (v1), by name.
func Core(t testing.TB, reg *registry.Registry, resource string) *registry.Store {
	t.Helper()
	return Store(t, reg, corev1.SchemeGroupVersion.WithResource(resource))
}
