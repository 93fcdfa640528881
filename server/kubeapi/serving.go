package kubeapi

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/registry"
)

// AddResource serves a resource from now on: its store and watch cache
// start, then it appears in discovery. A CRD adds its resources this way.
func (a *API) AddResource(r *Resource) error { return a.registry.Add(r) }

// ReplaceResource serves r in place of the row already served under its
// group, version and name, or adds it if there is none (see
// registry.Registry.Replace).
func (a *API) ReplaceResource(r *Resource) error { return a.registry.Replace(r) }

// RemoveResource stops serving a resource; what it stored in etcd is left
// to the caller.
func (a *API) RemoveResource(gvr schema.GroupVersionResource) bool { return a.registry.Remove(gvr) }

// Stop ends every watch; resources added later are refused.
func (a *API) Stop() { a.registry.Stop() }

// Store is the etcd3 store behind one resource, for views of its watch
// cache's clock and history and for the wiring's informers. Every write
// goes through the registry's store (Registry().Store).
func (a *API) Store(gvr schema.GroupVersionResource) (*registry.EtcdStore, bool) {
	return a.registry.Storage(gvr)
}

// Stores are the etcd3 stores of every resource served now, for the
// wiring's views of their watch caches.
func (a *API) Stores() []*registry.EtcdStore {
	var out []*registry.EtcdStore
	for _, s := range a.registry.Stores() {
		if es, ok := a.registry.Storage(s.Resource.GroupVersionResource()); ok {
			out = append(out, es)
		}
	}
	return out
}

// NamespacedCollections are what resetting a namespace deletes (see
// registry.Registry.NamespacedCollections).
func (a *API) NamespacedCollections() []schema.GroupVersionResource {
	return a.registry.NamespacedCollections()
}

// lookup finds a served resource with its store (nil for a review).
func (a *API) lookup(gvr schema.GroupVersionResource) (*Resource, *registry.Store, bool) {
	res, ok := a.registry.Lookup(gvr)
	if !ok {
		return nil, nil, false
	}
	store, ok := a.registry.Store(gvr)
	if res.Review == nil && !ok {
		return nil, nil, false // being removed
	}
	return res, store, true
}

// NamespacedStores are the etcd3 stores of every namespaced resource
// served now.
func (a *API) NamespacedStores() []*registry.EtcdStore {
	var out []*registry.EtcdStore
	for _, s := range a.registry.NamespacedStores() {
		if es, ok := a.registry.Storage(s.Resource.GroupVersionResource()); ok {
			out = append(out, es)
		}
	}
	return out
}
