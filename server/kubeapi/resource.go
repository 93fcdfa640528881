package kubeapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/registry"
)

// Resource, TableSpec and Registry are the registry's: a resource's row
// (its strategy included) and the set of rows served.
type (
	Resource  = registry.Resource
	TableSpec = registry.TableSpec
	Registry  = registry.Registry
)

// apiResource is a resource's discovery entry.
func apiResource(r *Resource) metav1.APIResource {
	return metav1.APIResource{
		Name: r.Name, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
		Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		StorageVersionHash: storageVersionHash(r.GroupVersion.WithKind(r.Kind)),
	}
}
