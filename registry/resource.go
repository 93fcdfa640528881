package registry

import (
	"time"

	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/storage"
)

// Resource is one row of the registry: everything the generic store and
// the generic REST handler need to serve a kind, its strategy included
// (what kube-apiserver splits into a registry.Store's NewFunc, PredicateFunc,
// CreateStrategy, UpdateStrategy and TableConvertor). Adding a resource
// adds a row, not a handler.
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
	// ValidateName checks metadata.name; nil means a DNS subdomain, as
	// most kinds' (RBAC's kinds and APIServices take a path segment).
	ValidateName validation.ValidateNameFunc
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
	// StorageVersion is a custom resource's CRD's storage version: its
	// objects are kept in etcd with that apiVersion whichever version wrote
	// them, and read back as the version asked for (the CRD's "None"
	// conversion), as kube-apiserver keeps them. Empty: the served version.
	StorageVersion string
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
	// the registry's, built from the generated definitions (a kind without
	// one there takes managedfields.NewDeducedTypeConverter).
	TypeConverter managedfields.TypeConverter
}

// TableSpec is how kubectl's `get` prints a kind: the columns after NAME,
// and each object's cells for them (kube's rest.TableConvertor).
type TableSpec struct {
	Columns []metav1.TableColumnDefinition
	Cells   func(obj runtime.Object, now time.Time) []any
}

// Serves reports whether the resource has the subresource ("" is the
// resource itself): /status for kinds with a status, and a namespace's
// /finalize, through which its spec.finalizers are removed.
func (r *Resource) Serves(subresource string) bool {
	switch subresource {
	case "":
		return true
	case "status":
		return r.HasStatus
	case "finalize":
		return r.isNamespace()
	}
	return false
}

func (r *Resource) isNamespace() bool { return r.GroupVersion.Group == "" && r.Name == "namespaces" }

// GroupVersionKind of the resource's objects.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// GroupResource names the resource in errors: "pods", "roles.rbac.authorization.k8s.io".
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name}
}

// GroupVersionResource names the resource in the registry.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Name)
}

// Attributes describe a call of verb on k as authorization and admission
// see it. As in kube-apiserver, a namespace object's own namespace is its
// name. Path is left to the caller.
func (r *Resource) Attributes(u pipeline.User, verb, subresource string, k storage.Key, dryRun bool) *pipeline.Attributes {
	a := &pipeline.Attributes{
		User: u, Verb: verb, Operation: pipeline.OperationFor(verb), IsResourceRequest: true,
		APIGroup: r.GroupVersion.Group, APIVersion: r.GroupVersion.Version,
		Resource: r.Name, Subresource: subresource, Namespace: k.Namespace, Name: k.Name,
		Kind: r.GroupVersionKind(), DryRun: dryRun,
	}
	if !r.Namespaced {
		a.Namespace = ""
	}
	if r.isNamespace() && k.Name != "" {
		a.Namespace = k.Name
	}
	return a
}

// attrs is the resource's selectable labels and fields.
func (r *Resource) attrs() storage.AttrFunc {
	if r.Attrs == nil {
		return storage.DefaultAttrs(r.Namespaced)
	}
	return r.Attrs
}
