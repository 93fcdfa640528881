package kubeapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/discovery"

	"github.com/kubelab/kubelab/registry"
)

// Resource, TableSpec and Registry are the registry's: a resource's row
// (its strategy included) and the set of rows served.
type (
	Resource  = registry.Resource
	TableSpec = registry.TableSpec
	Registry  = registry.Registry
)

// apiResource is a resource's discovery entry. Its storage version hash
// is of the version the objects are stored as, as in kube-apiserver, so
// that autoscaling/v1 and v2 HorizontalPodAutoscalers share one.
func apiResource(r *Resource) metav1.APIResource {
	stored := r.StorageGroupVersion()
	return metav1.APIResource{
		Name: r.Name, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
		Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		StorageVersionHash: discovery.StorageVersionHash(stored.Group, stored.Version, r.Kind),
	}
}
