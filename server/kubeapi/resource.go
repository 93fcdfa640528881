package kubeapi

import (
	"fmt"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/storage"
)

// Resource is one row of the registry: everything the generic handler and
// store need to serve a kind. Adding a resource adds a row, not a handler.
type Resource struct {
	GroupVersion schema.GroupVersion
	// Name is the plural, as in URLs: "pods".
	Name         string
	SingularName string
	Kind         string
	Namespaced   bool
	Verbs        []string
	ShortNames   []string
	Categories   []string
	// New and NewList make empty objects of the kind and its list.
	New     func() runtime.Object
	NewList func() runtime.Object
	// Attrs are the labels and fields selectors can use; nil means
	// metadata.name and metadata.namespace.
	Attrs storage.AttrFunc
	// Table prints objects as kubectl's columns; nil means NAME and AGE.
	Table *TableSpec
	// Default fills the defaults a real API server fills on create and update.
	Default func(obj runtime.Object)
	// Validate checks kind-specific rules beyond object metadata; old is nil on create.
	Validate func(obj, old runtime.Object) field.ErrorList
	// PrepareForCreate resets what a client may not set, e.g. a pod's status.
	PrepareForCreate func(obj runtime.Object)
	// PrepareForUpdate does the same on every update and patch, before
	// defaults and validation; old is the stored object.
	PrepareForUpdate func(obj, old runtime.Object)
	// HasStatus says the kind has a status subresource: writes to the main
	// resource keep the stored status, writes to /status keep the spec.
	HasStatus bool
	// Review, if set, makes the resource a question, not a store: a create
	// is answered by Review (the requesting user, the posted object) and
	// nothing is written, like kube's access reviews.
	Review func(user pipeline.User, obj runtime.Object) (runtime.Object, error)
	// Custom marks a custom resource, served from a CRD: objects are
	// unstructured, stored as JSON under /registry/<group>/<resource>,
	// served as JSON (not protobuf), and take no strategic merge patch.
	Custom bool
	// Prune drops the fields the kind's schema does not know from obj and
	// returns their paths; decoding reports them as unknown fields.
	Prune func(obj runtime.Object) []string
	// GroupInKey stores objects under /registry/<group>/<resource> as
	// kube-apiserver stores its aggregated groups' kinds (CRDs, APIServices);
	// custom resources always are.
	GroupInKey bool
	// Codec, if set, is how objects are kept in etcd; nil means protobuf at
	// the resource's own version. A version served beside another (as
	// events.k8s.io/v1 events beside core ones) stores as that other one.
	Codec storage.Codec
	// TypeConverter gives server-side apply this kind's schema; nil means
	// the API's, built from the generated definitions (a kind without one
	// there takes managedfields.NewDeducedTypeConverter).
	TypeConverter managedfields.TypeConverter
}

// serves reports whether the resource has the subresource ("" is the
// resource itself): /status for kinds with a status, and a namespace's
// /finalize, through which its spec.finalizers are removed.
func (r *Resource) serves(subresource string) bool {
	switch subresource {
	case "":
		return true
	case "status":
		return r.HasStatus
	case "finalize":
		return r.GroupVersion.Group == "" && r.Name == "namespaces"
	}
	return false
}

// GroupVersionKind of the resource's objects.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// GroupResource names the resource in errors: "pods", "roles.rbac.authorization.k8s.io".
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name}
}

// APIResource is the resource's discovery entry.
func (r *Resource) APIResource() metav1.APIResource {
	return metav1.APIResource{
		Name: r.Name, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
		Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		StorageVersionHash: storageVersionHash(r.GroupVersion.WithKind(r.Kind)),
	}
}

// Registry holds the resources the API serves, by group/version and name.
// Rows can be added and removed while it serves (a CRD adds one).
type Registry struct {
	mu    sync.RWMutex
	byGVR map[schema.GroupVersionResource]*Resource
	// groups keeps discovery order: groups in the order first registered.
	groups []string
}

// NewRegistry indexes resources.
func NewRegistry(resources []*Resource) *Registry {
	reg := &Registry{byGVR: map[schema.GroupVersionResource]*Resource{}}
	for _, r := range resources {
		reg.add(r)
	}
	return reg
}

func (reg *Registry) add(r *Resource) {
	gvr := r.GroupVersion.WithResource(r.Name)
	reg.byGVR[gvr] = r
	for _, g := range reg.groups {
		if g == r.GroupVersion.Group {
			return
		}
	}
	reg.groups = append(reg.groups, r.GroupVersion.Group)
}

// Add registers a resource; one already served under its group, version
// and name is an error.
func (reg *Registry) Add(r *Resource) error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	gvr := r.GroupVersion.WithResource(r.Name)
	if _, ok := reg.byGVR[gvr]; ok {
		return fmt.Errorf("%s is already served", gvr)
	}
	reg.add(r)
	return nil
}

// set registers r, replacing any row under its group, version and name.
func (reg *Registry) set(r *Resource) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.add(r)
}

// Remove unregisters a resource, and its group when it was the last of it.
func (reg *Registry) Remove(gvr schema.GroupVersionResource) (*Resource, bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	r, ok := reg.byGVR[gvr]
	if !ok {
		return nil, false
	}
	delete(reg.byGVR, gvr)
	for other := range reg.byGVR {
		if other.Group == gvr.Group {
			return r, true
		}
	}
	for i, g := range reg.groups {
		if g == gvr.Group {
			reg.groups = append(reg.groups[:i:i], reg.groups[i+1:]...)
			break
		}
	}
	return r, true
}

// Lookup finds a resource by group, version and plural name.
func (reg *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	r, ok := reg.byGVR[gvr]
	return r, ok
}

// All lists every resource, sorted by group, version and name.
func (reg *Registry) All() []*Resource {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.allLocked()
}

func (reg *Registry) allLocked() []*Resource {
	out := make([]*Resource, 0, len(reg.byGVR))
	for _, r := range reg.byGVR {
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
	for _, g := range reg.groups {
		if g == group {
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
