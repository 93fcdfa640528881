// Package garbagecollector deletes objects whose owners are gone, as
// kube-controller-manager's garbage collector does, from
// metadata.ownerReferences:
//
//   - A dependent whose every owner is gone (no object with the owner's
//     kind, name and UID) is deleted; owners that are gone are removed
//     from a dependent that still has others.
//   - An owner deleted with propagationPolicy=Orphan carries the "orphan"
//     finalizer: its dependents lose their reference to it, then the
//     finalizer goes and with it the owner.
//   - An owner deleted with propagationPolicy=Foreground carries the
//     "foregroundDeletion" finalizer: its dependents are deleted first,
//     and the owner goes once none that blocks it (blockOwnerDeletion) is
//     left.
//
// It follows every resource served, custom resources included, keeping in
// memory only who owns whom; whether an owner exists is always read from
// etcd, never from that memory, so a dependent seen before its new owner
// is not deleted by mistake.
package garbagecollector

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// Resolver finds the store of the resource whose objects have the given
// apiVersion and kind (an owner reference names its owner so).
type Resolver func(apiVersion, kind string) (*registry.Store, bool)

// ServedBy resolves an owner reference's kind to the store of the resource
// of that group and kind reg serves now, at any version (they share a
// store). Subresources are not owners.
func ServedBy(reg *registry.Registry) Resolver {
	return func(apiVersion, kind string) (*registry.Store, bool) {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return nil, false
		}
		for _, r := range reg.All() {
			if r.GroupVersion.Group == gv.Group && r.Kind == kind && !strings.Contains(r.Name, "/") {
				return reg.Store(r.GroupVersion.WithResource(r.Name))
			}
		}
		return nil, false
	}
}

// Config is what the collector works on.
type Config struct {
	// Stores lists the stores of every resource served now; the collector
	// looks again every StoresInterval, as custom resources come and go.
	Stores         func() []*registry.Store
	Resolve        Resolver
	StoresInterval time.Duration
	Logger         *slog.Logger
}

// Collector is the garbage collector.
type Collector struct {
	cfg  Config
	loop *controller.Loop

	mu sync.Mutex
	// stores by resource ("group/resource"), to find an object's store
	// from its work-queue key.
	stores map[string]*registry.Store
	// objects: every object's key by UID, for the owners' keys.
	objects map[types.UID]string
	// dependents: by owner UID, each dependent's key and whether it
	// blocks the owner's foreground deletion.
	dependents map[types.UID]map[string]bool
	// owners: the owner UIDs each dependent named when last seen.
	owners map[string][]types.UID
}

// New returns a collector; Run starts it.
func New(cfg Config) *Collector {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StoresInterval == 0 {
		cfg.StoresInterval = 2 * time.Second
	}
	c := &Collector{cfg: cfg, stores: map[string]*registry.Store{}, objects: map[types.UID]string{},
		dependents: map[types.UID]map[string]bool{}, owners: map[string][]types.UID{}}
	c.loop = controller.New("garbage-collector", c.sync, cfg.Logger)
	return c
}

// Run works until ctx ends, and returns once its informers have stopped:
// whoever runs it stops the stores they read after it returns.
func (c *Collector) Run(ctx context.Context) {
	var following sync.WaitGroup
	following.Go(func() { c.followStores(ctx) })
	c.loop.Run(ctx)
	following.Wait()
}

// followStores starts an informer for each resource as it appears and
// stops it when the resource goes; it returns once they have all ended.
func (c *Collector) followStores(ctx context.Context) {
	running := map[*registry.Store]context.CancelFunc{}
	var informers sync.WaitGroup
	defer informers.Wait()
	tick := time.NewTicker(c.cfg.StoresInterval)
	defer tick.Stop()
	for {
		seen := map[*registry.Store]bool{}
		for _, s := range c.cfg.Stores() {
			seen[s] = true
			if running[s] != nil {
				continue
			}
			c.mu.Lock()
			c.stores[resourceID(s)] = s
			c.mu.Unlock()
			sctx, cancel := context.WithCancel(ctx)
			running[s] = cancel
			inf := informer.New("gc:"+resourceID(s), s, &handler{c: c, store: s}, c.cfg.Logger)
			informers.Go(func() { inf.Run(sctx) })
		}
		for s, cancel := range running {
			if !seen[s] {
				cancel()
				delete(running, s)
				c.mu.Lock()
				if c.stores[resourceID(s)] == s {
					delete(c.stores, resourceID(s))
				}
				c.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func resourceID(s *registry.Store) string {
	gr := s.GroupResource()
	return gr.Group + "/" + gr.Resource
}

// A work-queue key is "group/resource|namespace|name".
func objectKey(s *registry.Store, m metav1.Object) string {
	return resourceID(s) + "|" + m.GetNamespace() + "|" + m.GetName()
}

func (c *Collector) parseKey(key string) (*registry.Store, storage.Key, bool) {
	parts := strings.SplitN(key, "|", 3)
	if len(parts) != 3 {
		return nil, storage.Key{}, false
	}
	c.mu.Lock()
	s := c.stores[parts[0]]
	c.mu.Unlock()
	return s, storage.Key{Namespace: parts[1], Name: parts[2]}, s != nil
}

// handler keeps the ownership index for one resource and queues what its
// changes call for.
type handler struct {
	c     *Collector
	store *registry.Store
	// uids are this resource's objects, to notice ones that went while
	// its informer was relisting.
	uids map[types.UID]bool
}

func (h *handler) Replace(objs []runtime.Object) {
	listed := map[types.UID]bool{}
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil {
			listed[m.GetUID()] = true
		}
	}
	for uid := range h.uids {
		if !listed[uid] {
			h.c.forget(uid, "")
		}
	}
	h.uids = listed
	for _, o := range objs {
		h.Upsert(o)
	}
}

func (h *handler) Upsert(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if h.uids == nil {
		h.uids = map[types.UID]bool{}
	}
	h.uids[m.GetUID()] = true
	key := objectKey(h.store, m)
	refs := m.GetOwnerReferences()
	c := h.c
	c.mu.Lock()
	c.objects[m.GetUID()] = key
	c.unlinkLocked(key)
	var owners []types.UID
	for _, ref := range refs {
		set := c.dependents[ref.UID]
		if set == nil {
			set = map[string]bool{}
			c.dependents[ref.UID] = set
		}
		set[key] = ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
		owners = append(owners, ref.UID)
	}
	if len(owners) > 0 {
		c.owners[key] = owners
	}
	c.mu.Unlock()
	if len(refs) > 0 || (m.GetDeletionTimestamp() != nil && hasGCFinalizer(m)) {
		c.loop.Enqueue(key)
	}
}

func (h *handler) Remove(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	delete(h.uids, m.GetUID())
	h.c.forget(m.GetUID(), objectKey(h.store, m))
}

// forget drops a deleted object from the index and queues whoever that
// concerns: its dependents, which may now be orphans, and its owners,
// which may be waiting for it to go.
func (c *Collector) forget(uid types.UID, key string) {
	c.mu.Lock()
	if key == "" {
		key = c.objects[uid]
	}
	delete(c.objects, uid)
	var queue []string
	for dep := range c.dependents[uid] {
		queue = append(queue, dep)
	}
	for _, owner := range c.owners[key] {
		if k, ok := c.objects[owner]; ok {
			queue = append(queue, k)
		}
	}
	c.unlinkLocked(key)
	c.mu.Unlock()
	for _, k := range queue {
		c.loop.Enqueue(k)
	}
}

// unlinkLocked removes key as a dependent of the owners it named.
func (c *Collector) unlinkLocked(key string) {
	for _, owner := range c.owners[key] {
		if set := c.dependents[owner]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(c.dependents, owner)
			}
		}
	}
	delete(c.owners, key)
}

func hasGCFinalizer(m metav1.Object) bool {
	for _, f := range m.GetFinalizers() {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			return true
		}
	}
	return false
}

// sync looks at one object as an owner being deleted and as a dependent.
func (c *Collector) sync(ctx context.Context, key string) error {
	s, k, ok := c.parseKey(key)
	if !ok {
		return nil // its resource is no longer served
	}
	obj, err := s.Get(ctx, k, "")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if m.GetDeletionTimestamp() != nil {
		for _, f := range m.GetFinalizers() {
			switch f {
			case metav1.FinalizerOrphanDependents:
				return c.orphan(ctx, s, k, m)
			case metav1.FinalizerDeleteDependents:
				return c.deleteDependents(ctx, s, k, m)
			}
		}
	}
	if len(m.GetOwnerReferences()) > 0 {
		return c.checkOwners(ctx, s, k, m)
	}
	return nil
}

// orphan lets every dependent go of the owner, then lets the owner go.
func (c *Collector) orphan(ctx context.Context, s *registry.Store, k storage.Key, owner metav1.Object) error {
	for _, dep := range c.dependentsOf(owner.GetUID()) {
		ds, dk, ok := c.parseKey(dep)
		if !ok {
			continue
		}
		if err := removeOwnerRefs(ctx, ds, dk, map[types.UID]bool{owner.GetUID(): true}); err != nil {
			return err
		}
	}
	return ignoreGone(s.RemoveFinalizer(ctx, k, owner.GetUID(), metav1.FinalizerOrphanDependents, controller.FieldManager))
}

// deleteDependents deletes the owner's dependents and, once none that
// blocks it is left, lets the owner go.
func (c *Collector) deleteDependents(ctx context.Context, s *registry.Store, k storage.Key, owner metav1.Object) error {
	blocked := false
	for dep, blocks := range c.dependentsWithBlocking(owner.GetUID()) {
		ds, dk, ok := c.parseKey(dep)
		if !ok {
			continue
		}
		obj, err := ds.Get(ctx, dk, "")
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if m, _ := meta.Accessor(obj); m.GetDeletionTimestamp() == nil {
			uid := m.GetUID()
			policy := metav1.DeletePropagationForeground
			if _, _, err := ds.Delete(ctx, dk, registry.DeleteOptions{PropagationPolicy: &policy, Preconditions: &storage.Preconditions{UID: &uid}}); ignoreGone(err) != nil {
				return err
			}
		}
		blocked = blocked || blocks
	}
	if blocked {
		return nil // each blocking dependent's removal queues the owner again
	}
	return ignoreGone(s.RemoveFinalizer(ctx, k, owner.GetUID(), metav1.FinalizerDeleteDependents, controller.FieldManager))
}

// checkOwners deletes a dependent whose owners are all gone, or whose
// remaining owners are all being deleted in the foreground; it removes the
// references to gone owners from one that still has others.
func (c *Collector) checkOwners(ctx context.Context, s *registry.Store, k storage.Key, dep metav1.Object) error {
	gone := map[types.UID]bool{}
	foreground := 0
	for _, ref := range dep.GetOwnerReferences() {
		owners, ok := c.cfg.Resolve(ref.APIVersion, ref.Kind)
		if !ok {
			return nil // a kind not served (yet): never a reason to delete
		}
		ownerKey := storage.Key{Name: ref.Name}
		if owners.Resource.Namespaced {
			if dep.GetNamespace() == "" {
				return nil // a cluster-scoped object cannot be owned by a namespaced one: not ours to judge
			}
			ownerKey.Namespace = dep.GetNamespace()
		}
		owner, err := owners.Get(ctx, ownerKey, "")
		switch {
		case apierrors.IsNotFound(err):
			gone[ref.UID] = true
		case err != nil:
			return err
		default:
			m, _ := meta.Accessor(owner)
			if m.GetUID() != ref.UID {
				gone[ref.UID] = true // a new object of the same name is not the owner
			} else if m.GetDeletionTimestamp() != nil && hasFinalizer(m, metav1.FinalizerDeleteDependents) {
				foreground++
			}
		}
	}
	refs := len(dep.GetOwnerReferences())
	switch {
	case len(gone) == refs || (foreground > 0 && len(gone)+foreground == refs):
		if dep.GetDeletionTimestamp() != nil {
			return nil // on its way already
		}
		uid := dep.GetUID()
		opts := registry.DeleteOptions{Preconditions: &storage.Preconditions{UID: &uid}}
		if foreground > 0 {
			p := metav1.DeletePropagationForeground
			opts.PropagationPolicy = &p
		}
		_, _, err := s.Delete(ctx, k, opts)
		return ignoreGone(err)
	case len(gone) > 0:
		return removeOwnerRefs(ctx, s, k, gone)
	}
	return nil
}

func hasFinalizer(m metav1.Object, name string) bool {
	for _, f := range m.GetFinalizers() {
		if f == name {
			return true
		}
	}
	return false
}

func (c *Collector) dependentsOf(uid types.UID) []string {
	var out []string
	for k := range c.dependentsWithBlocking(uid) {
		out = append(out, k)
	}
	return out
}

func (c *Collector) dependentsWithBlocking(uid types.UID) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]bool, len(c.dependents[uid]))
	for k, b := range c.dependents[uid] {
		out[k] = b
	}
	return out
}

// removeOwnerRefs takes the references to the given owners off an object.
func removeOwnerRefs(ctx context.Context, s *registry.Store, k storage.Key, owners map[types.UID]bool) error {
	_, err := s.Update(ctx, k, registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		next := cur.DeepCopyObject()
		m, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		var keep []metav1.OwnerReference
		for _, ref := range m.GetOwnerReferences() {
			if !owners[ref.UID] {
				keep = append(keep, ref)
			}
		}
		m.SetOwnerReferences(keep)
		return next, nil
	}), registry.UpdateOptions{FieldManager: controller.FieldManager})
	return ignoreGone(err)
}

// ignoreGone: an object deleted or replaced meanwhile needs nothing more
// from this pass; its own events bring the collector back.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
