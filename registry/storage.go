package registry

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/watchcache"
)

// Storage is what a Store needs of one resource's storage, as
// k8s.io/apiserver's registry needs its storage.Interface: conditional
// writes (create if absent, update and delete on the revision read, with
// preconditions), reads at a resourceVersion, and watches.
type Storage interface {
	Create(ctx context.Context, k storage.Key, obj runtime.Object) (runtime.Object, error)
	Get(ctx context.Context, k storage.Key, resourceVersion string) (runtime.Object, error)
	GuaranteedUpdate(ctx context.Context, k storage.Key, pre *storage.Preconditions, tryUpdate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	Delete(ctx context.Context, k storage.Key, pre *storage.Preconditions) (runtime.Object, error)
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error)
	Stop()
}

var _ Storage = (*etcd3.Store)(nil)

// open starts the store (and so the watch cache) and field managers of a
// resource that is not only a question; a question gets no store.
func (reg *Registry) open(r *Resource) (*Store, error) {
	if r.Review != nil {
		return nil, nil
	}
	gvr := r.GroupVersionResource()
	var codec storage.Codec = storage.NewProtobufCodec(Scheme, r.GroupVersion)
	if r.Codec != nil {
		codec = r.Codec
	}
	if r.Custom {
		codec = versionedJSON{gv: r.GroupVersion, stored: r.StorageGroupVersion(), def: r.Default}
	}
	fm, err := newFieldManagers(reg.cfg.TypeConverter, r)
	if err != nil {
		return nil, err
	}
	es, err := etcd3.New(etcd3.Config{
		Client: reg.cfg.Client, Resource: r.GroupResource(), Namespaced: r.Namespaced,
		Prefix: storage.ResourcePrefix(r.GroupResource(), r.Custom || r.GroupInKey),
		Codec:  codec, NewFunc: r.New, Attrs: r.attrs(), Logger: reg.cfg.Logger,
		WatchFromEtcd: reg.cfg.WatchFromEtcd,
		Cache:         watchcache.Config{ReplayEtcdHistory: reg.cfg.ReplayEtcdHistory, EventFreshDuration: reg.cfg.EventFreshDuration},
	})
	if err != nil {
		return nil, fmt.Errorf("store for %s: %w", gvr, err)
	}
	reg.mu.RLock()
	stopped := reg.stopped
	reg.mu.RUnlock()
	if stopped {
		es.Stop()
		return nil, fmt.Errorf("store for %s: the registry is stopped", gvr)
	}
	return &Store{Resource: r, storage: es, fields: fm, reg: reg}, nil
}

// versionedJSON stores custom resources as JSON and reads them as the
// row's version: every served version of a CRD shares one etcd prefix,
// and with kube's "None" conversion an object read through a version is
// that version with the same fields. Reading also defaults (and prunes)
// by the row's schema, as kube-apiserver's storage decoder does, so that a
// default added to a CRD shows on objects stored before it.
type versionedJSON struct {
	storage.JSONCodec
	// gv is the version served, stored the version kept in etcd.
	gv, stored schema.GroupVersion
	def        func(runtime.Object)
}

// Encode keeps the object as the storage version: only its apiVersion
// changes, as in kube-apiserver's "None" conversion.
func (c versionedJSON) Encode(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || c.stored == c.gv {
		return c.JSONCodec.Encode(obj)
	}
	// A shallow copy: the caller's object stays the served version.
	stored := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	stored.SetAPIVersion(c.stored.String())
	return c.JSONCodec.Encode(stored)
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
