package admission

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/storage"
)

// NamespaceGetter finds a namespace for the plugins that depend on one.
type NamespaceGetter interface {
	// GetNamespace returns the namespace, or a NotFound Status error
	// (`namespaces "x" not found`). The result must not be modified.
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// ObjectGetter reads one object from storage; *etcd3.Store is one.
type ObjectGetter interface {
	Get(ctx context.Context, k storage.Key, resourceVersion string) (runtime.Object, error)
}

// forceLiveFor is how long after a namespace's deletion passed admission
// its lookups skip the cache, as kube's NamespaceLifecycle does, so a
// stale cache never lets a create into a namespace that is going away.
const forceLiveFor = 30 * time.Second

// NamespaceCache is a NamespaceGetter that reads memory, fed by a watch;
// a namespace not (yet) in memory is looked up in storage, so one created
// a moment ago is found before its watch event arrives.
type NamespaceCache struct {
	inf  *informer.Informer
	live ObjectGetter

	mu        sync.RWMutex
	byName    map[string]*corev1.Namespace
	forceLive map[string]time.Time
}

var _ NamespaceGetter = (*NamespaceCache)(nil)

// NewNamespaceCache follows the namespaces in src and falls back to live
// (both usually the namespaces' *etcd3.Store).
func NewNamespaceCache(src informer.Source, live ObjectGetter) *NamespaceCache {
	c := &NamespaceCache{live: live, byName: map[string]*corev1.Namespace{}, forceLive: map[string]time.Time{}}
	c.inf = informer.New("namespaces", src, nsHandler{c}, nil)
	return c
}

// Start follows the namespaces until ctx ends.
func (c *NamespaceCache) Start(ctx context.Context) { go c.inf.Run(ctx) }

// WaitForSync returns once the namespaces have been listed.
func (c *NamespaceCache) WaitForSync(ctx context.Context) error {
	select {
	case <-c.inf.Synced():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Synced is closed once the cache has read every namespace.
func (c *NamespaceCache) Synced() <-chan struct{} { return c.inf.Synced() }

// GetNamespace implements NamespaceGetter.
func (c *NamespaceCache) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	c.mu.RLock()
	ns, ok := c.byName[name]
	until, forced := c.forceLive[name]
	c.mu.RUnlock()
	if ok && (!forced || time.Now().After(until)) {
		return ns, nil
	}
	obj, err := c.live.Get(ctx, storage.Key{Name: name}, "")
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
		}
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// ForceLiveLookup makes lookups of name read storage for a while: its
// deletion has been admitted and memory may lag behind.
func (c *NamespaceCache) ForceLiveLookup(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for n, t := range c.forceLive {
		if now.After(t) {
			delete(c.forceLive, n)
		}
	}
	c.forceLive[name] = now.Add(forceLiveFor)
}

type nsHandler struct{ c *NamespaceCache }

// Replace implements informer.Handler.
func (h nsHandler) Replace(objs []runtime.Object) {
	m := make(map[string]*corev1.Namespace, len(objs))
	for _, o := range objs {
		ns := o.(*corev1.Namespace)
		m[ns.Name] = ns
	}
	h.c.mu.Lock()
	h.c.byName = m
	h.c.mu.Unlock()
}

// Upsert implements informer.Handler.
func (h nsHandler) Upsert(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	h.c.mu.Lock()
	h.c.byName[ns.Name] = ns
	h.c.mu.Unlock()
}

// Remove implements informer.Handler.
func (h nsHandler) Remove(obj runtime.Object) {
	h.c.mu.Lock()
	delete(h.c.byName, obj.(*corev1.Namespace).Name)
	h.c.mu.Unlock()
}
