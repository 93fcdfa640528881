// Package registry is the one write path of kubelab's Kubernetes objects,
// after k8s.io/apiserver's registry/generic/registry: per resource, a
// Store that creates, updates, patches, deletes, gets, lists and watches
// objects, with the resource's strategy (defaulting, system fields,
// generation, managedFields), graceful deletion and finalizers, and the
// pipeline's admission, validation and trace, as the user in the context.
// The API's handlers, kubelab's controllers and its own bootstrap all
// write through it; only it (and the wiring) reaches the etcd3 store.
package registry

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// Config is what the registry needs to open its resources' storage.
type Config struct {
	Client *clientv3.Client
	// WatchFromEtcd serves watches from etcd, as kube-apiserver's
	// --watch-cache=false; ReplayEtcdHistory starts each watch cache's
	// window with the history etcd still holds (see watchcache.Config).
	WatchFromEtcd     bool
	ReplayEtcdHistory bool
	// EventFreshDuration shortens kube's 75 s in the watch caches, for tests.
	EventFreshDuration time.Duration
	// TypeConverter gives server-side apply the kinds' schemas; nil falls
	// back to schemas deduced from the objects (lists then merge atomically).
	TypeConverter managedfields.TypeConverter
	// Resources defaults to BuiltinResources.
	Resources []*Resource
	Logger    *slog.Logger
}

// Registry holds the resources served, by group/version and name, each
// with its Store. Rows can be added and removed while it serves (a CRD
// adds one).
type Registry struct {
	cfg Config
	mu  sync.RWMutex
	// rows are every resource, stores those that keep objects (a review
	// keeps none).
	rows   map[schema.GroupVersionResource]*Resource
	stores map[schema.GroupVersionResource]*Store
	// groups keeps discovery order: groups in the order first registered.
	groups  []string
	stopped bool
	// pipeline is set once the stages exist (RBAC reads its rules through
	// the stores this registry opens).
	pipeline *pipeline.Pipeline
}

// New opens a store (and so a watch cache) for every resource.
func New(cfg Config) (*Registry, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TypeConverter == nil {
		cfg.TypeConverter = managedfields.NewDeducedTypeConverter()
	}
	if cfg.Resources == nil {
		cfg.Resources = BuiltinResources()
	}
	reg := &Registry{cfg: cfg, rows: map[schema.GroupVersionResource]*Resource{}, stores: map[schema.GroupVersionResource]*Store{}}
	for _, r := range cfg.Resources {
		st, err := reg.open(r)
		if err != nil {
			reg.Stop()
			return nil, err
		}
		reg.mu.Lock()
		reg.setLocked(r, st)
		reg.mu.Unlock()
	}
	return reg, nil
}

// SetPipeline puts the request pipeline's admission, authorization and
// trace in front of every store. Without one, every call is allowed and
// admitted, as in unit tests of the API.
func (reg *Registry) SetPipeline(p *pipeline.Pipeline) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.pipeline = p
}

func (reg *Registry) stages() *pipeline.Pipeline {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.pipeline
}

// Logger is the registry's logger.
func (reg *Registry) Logger() *slog.Logger { return reg.cfg.Logger }

func (reg *Registry) setLocked(r *Resource, st *Store) {
	gvr := r.GroupVersionResource()
	reg.rows[gvr] = r
	if st != nil {
		reg.stores[gvr] = st
	} else {
		delete(reg.stores, gvr)
	}
	if !slices.Contains(reg.groups, r.GroupVersion.Group) {
		reg.groups = append(reg.groups, r.GroupVersion.Group)
	}
}

// Add serves a resource from now on: its store and watch cache start,
// then it appears in discovery. One already served is an error.
func (reg *Registry) Add(r *Resource) error {
	gvr := r.GroupVersionResource()
	if _, ok := reg.Lookup(gvr); ok {
		return fmt.Errorf("%s is already served", gvr)
	}
	st, err := reg.open(r)
	if err != nil {
		return err
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if _, ok := reg.rows[gvr]; ok {
		st.stop()
		return fmt.Errorf("%s is already served", gvr)
	}
	reg.setLocked(r, st)
	return nil
}

// Replace serves r in place of the row already served under its group,
// version and name, or adds it if there is none. A changed CRD rebuilds
// its rows this way, so that requests made meanwhile never find the
// resource gone; watches on the old row end and clients resume.
func (reg *Registry) Replace(r *Resource) error {
	st, err := reg.open(r)
	if err != nil {
		return err
	}
	reg.mu.Lock()
	old := reg.stores[r.GroupVersionResource()]
	reg.setLocked(r, st)
	reg.mu.Unlock()
	if old != nil {
		old.stop()
	}
	return nil
}

// Remove stops serving a resource: it leaves discovery, and its watches
// end (clients see their watch close, as when kube-apiserver drops a CRD).
// What it stored in etcd is left to the caller.
func (reg *Registry) Remove(gvr schema.GroupVersionResource) bool {
	reg.mu.Lock()
	_, ok := reg.rows[gvr]
	st := reg.stores[gvr]
	delete(reg.rows, gvr)
	delete(reg.stores, gvr)
	if ok && !reg.hasGroupLocked(gvr.Group) {
		reg.groups = slices.DeleteFunc(reg.groups, func(g string) bool { return g == gvr.Group })
	}
	reg.mu.Unlock()
	if st != nil {
		st.stop()
	}
	return ok
}

// Stop ends every watch; resources added later are refused.
func (reg *Registry) Stop() {
	reg.mu.Lock()
	reg.stopped = true
	stores := make([]*Store, 0, len(reg.stores))
	for _, s := range reg.stores {
		stores = append(stores, s)
	}
	reg.mu.Unlock()
	for _, s := range stores {
		s.stop()
	}
}

// Lookup finds a resource by group, version and plural name.
func (reg *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	r, ok := reg.rows[gvr]
	return r, ok
}

// Store is the store of a resource that keeps objects.
func (reg *Registry) Store(gvr schema.GroupVersionResource) (*Store, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	s, ok := reg.stores[gvr]
	return s, ok
}

// EtcdStore is the etcd3 store behind a resource, named here so that the
// views that read its watch cache's clock need not reach into storage.
type EtcdStore = etcd3.Store

// Storage is the etcd3 store behind a resource, for the wiring (the
// informers of RBAC and admission) and for views of the watch cache's
// clock; every write goes through Store.
func (reg *Registry) Storage(gvr schema.GroupVersionResource) (*EtcdStore, bool) {
	s, ok := reg.Store(gvr)
	if !ok {
		return nil, false
	}
	return s.storage.(*etcd3.Store), true
}

// Stores are the stores of every resource served now, sorted by resource.
func (reg *Registry) Stores() []*Store {
	reg.mu.RLock()
	out := make([]*Store, 0, len(reg.stores))
	for _, s := range reg.stores {
		out = append(out, s)
	}
	reg.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		return out[i].Resource.GroupVersionResource().String() < out[j].Resource.GroupVersionResource().String()
	})
	return out
}

// NamespacedStores are the stores of every namespaced resource served
// now: what a namespace's deletion must empty.
func (reg *Registry) NamespacedStores() []*Store {
	return slices.DeleteFunc(reg.Stores(), func(s *Store) bool { return !s.Resource.Namespaced })
}

// NamespacedCollections are the namespaced resources served now whose
// collections can be deleted (the verb deletecollection), one version of
// each group and resource, sorted: what resetting a namespace deletes.
func (reg *Registry) NamespacedCollections() []schema.GroupVersionResource {
	var all []schema.GroupVersionResource
	for _, s := range reg.NamespacedStores() {
		if slices.Contains(s.Resource.Verbs, "deletecollection") {
			all = append(all, s.Resource.GroupVersionResource())
		}
	}
	slices.SortFunc(all, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	// The versions of a resource share its objects: one delete is enough.
	return slices.CompactFunc(all, func(a, b schema.GroupVersionResource) bool { return a.GroupResource() == b.GroupResource() })
}

// All lists every resource, sorted by group, version and name.
func (reg *Registry) All() []*Resource {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.allLocked()
}

func (reg *Registry) allLocked() []*Resource {
	out := make([]*Resource, 0, len(reg.rows))
	for _, r := range reg.rows {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.GroupVersion != b.GroupVersion {
			return a.GroupVersion.String() < b.GroupVersion.String()
		}
		return a.Name < b.Name
	})
	return out
}

// InGroupVersion lists the resources of one group/version, by name.
func (reg *Registry) InGroupVersion(gv schema.GroupVersion) []*Resource {
	var out []*Resource
	for _, r := range reg.All() {
		if r.GroupVersion == gv {
			out = append(out, r)
		}
	}
	return out
}

// HasGroup reports whether any resource of group is served.
func (reg *Registry) HasGroup(group string) bool {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return slices.Contains(reg.groups, group)
}

func (reg *Registry) hasGroupLocked(group string) bool {
	for gvr := range reg.rows {
		if gvr.Group == group {
			return true
		}
	}
	return false
}

// Groups lists the named groups (not the core group) in registration order,
// each with its versions.
func (reg *Registry) Groups() []metav1.APIGroup {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	all := reg.allLocked()
	var out []metav1.APIGroup
	for _, g := range reg.groups {
		if g == "" {
			continue
		}
		versions := map[string]bool{}
		var group metav1.APIGroup
		group.Name = g
		for _, r := range all {
			if r.GroupVersion.Group == g && !versions[r.GroupVersion.Version] {
				versions[r.GroupVersion.Version] = true
				gv := metav1.GroupVersionForDiscovery{GroupVersion: r.GroupVersion.String(), Version: r.GroupVersion.Version}
				group.Versions = append(group.Versions, gv)
			}
		}
		// Preferred first, as kube orders them: v2, v1, v1beta1, v1alpha1.
		sort.SliceStable(group.Versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(group.Versions[i].Version, group.Versions[j].Version) > 0
		})
		group.PreferredVersion = group.Versions[0]
		out = append(out, group)
	}
	return out
}
