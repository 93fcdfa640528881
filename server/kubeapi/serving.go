package kubeapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// open starts the store (and so the watch cache) and field managers of a
// resource that is not only a question.
func (a *API) open(r *Resource) error {
	if r.Review != nil {
		return nil // nothing stored
	}
	gvr := r.GroupVersion.WithResource(r.Name)
	attrs := r.Attrs
	if attrs == nil {
		attrs = storage.DefaultAttrs(r.Namespaced)
	}
	var codec storage.Codec = storage.NewProtobufCodec(Scheme, r.GroupVersion)
	if r.Codec != nil {
		codec = r.Codec
	}
	if r.Custom {
		codec = versionedJSON{gv: r.GroupVersion, def: r.Default}
	}
	fm, err := newFieldManagers(a.cfg.TypeConverter, r)
	if err != nil {
		return err
	}
	store, err := etcd3.New(etcd3.Config{
		Client: a.cfg.Client, Resource: r.GroupResource(), Namespaced: r.Namespaced,
		Prefix: storage.ResourcePrefix(r.GroupResource(), r.Custom || r.GroupInKey),
		Codec:  codec, NewFunc: r.New, Attrs: attrs, Logger: a.cfg.Logger,
		WatchFromEtcd: a.cfg.WatchFromEtcd,
		Cache:         watchcache.Config{ReplayEtcdHistory: a.cfg.ReplayEtcdHistory, EventFreshDuration: a.cfg.EventFreshDuration},
	})
	if err != nil {
		return fmt.Errorf("store for %s: %w", gvr, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		store.Stop()
		return fmt.Errorf("store for %s: the API is stopped", gvr)
	}
	a.stores[gvr] = store
	a.managers[gvr] = fm
	return nil
}

// versionedJSON stores custom resources as JSON and reads them as the
// row's version: every served version of a CRD shares one etcd prefix,
// and with kube's "None" conversion an object read through a version is
// that version with the same fields. Reading also defaults (and prunes)
// by the row's schema, as kube-apiserver's storage decoder does, so that a
// default added to a CRD shows on objects stored before it.
type versionedJSON struct {
	storage.JSONCodec
	gv  schema.GroupVersion
	def func(runtime.Object)
}

func (c versionedJSON) Decode(data []byte, into runtime.Object) error {
	if err := c.JSONCodec.Decode(data, into); err != nil {
		return err
	}
	into.GetObjectKind().SetGroupVersionKind(c.gv.WithKind(into.GetObjectKind().GroupVersionKind().Kind))
	if c.def != nil {
		c.def(into)
	}
	return nil
}

// AddResource serves a resource from now on: its store and watch cache
// start, then it appears in discovery. A CRD adds its resources this way.
func (a *API) AddResource(r *Resource) error {
	gvr := r.GroupVersion.WithResource(r.Name)
	if _, ok := a.registry.Lookup(gvr); ok {
		return fmt.Errorf("%s is already served", gvr)
	}
	if err := a.open(r); err != nil {
		return err
	}
	if err := a.registry.Add(r); err != nil {
		a.closeStore(gvr)
		return err
	}
	return nil
}

// ReplaceResource serves r in place of the row already served under its
// group, version and name, or adds it if there is none. A changed CRD
// rebuilds its rows this way, so that requests made meanwhile never find
// the resource gone; watches on the old row end and clients resume.
func (a *API) ReplaceResource(r *Resource) error {
	gvr := r.GroupVersion.WithResource(r.Name)
	if _, ok := a.registry.Lookup(gvr); !ok {
		return a.AddResource(r)
	}
	a.mu.RLock()
	old := a.stores[gvr]
	a.mu.RUnlock()
	if err := a.open(r); err != nil {
		return err
	}
	a.registry.set(r)
	if old != nil {
		old.Stop()
	}
	return nil
}

// RemoveResource stops serving a resource: it leaves discovery, and its
// watches end (clients see their watch close, as when kube-apiserver drops
// a CRD). What it stored in etcd is left to the caller.
func (a *API) RemoveResource(gvr schema.GroupVersionResource) bool {
	if _, ok := a.registry.Remove(gvr); !ok {
		return false
	}
	a.closeStore(gvr)
	return true
}

func (a *API) closeStore(gvr schema.GroupVersionResource) {
	a.mu.Lock()
	store := a.stores[gvr]
	delete(a.stores, gvr)
	delete(a.managers, gvr)
	a.mu.Unlock()
	if store != nil {
		store.Stop()
	}
}

// Stop ends every watch; resources added later are refused.
func (a *API) Stop() {
	a.mu.Lock()
	a.stopped = true
	stores := make([]*etcd3.Store, 0, len(a.stores))
	for _, s := range a.stores {
		stores = append(stores, s)
	}
	a.mu.Unlock()
	for _, s := range stores {
		s.Stop()
	}
}

// lookup finds a served resource with its store and field managers.
func (a *API) lookup(gvr schema.GroupVersionResource) (*Resource, *etcd3.Store, *fieldManagers, bool) {
	res, ok := a.registry.Lookup(gvr)
	if !ok {
		return nil, nil, nil, false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	store, fm := a.stores[gvr], a.managers[gvr]
	if res.Review == nil && store == nil {
		return nil, nil, nil, false // being removed
	}
	return res, store, fm, true
}

// storesSnapshot is every store with its resource, for work across resources.
func (a *API) storesSnapshot() map[schema.GroupVersionResource]*etcd3.Store {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make(map[schema.GroupVersionResource]*etcd3.Store, len(a.stores))
	for gvr, s := range a.stores {
		out[gvr] = s
	}
	return out
}
