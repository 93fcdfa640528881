package server

import (
	"context"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/controller/garbagecollector"
	"github.com/kubelab/kubelab/controller/kubelet"
	"github.com/kubelab/kubelab/controller/namespace"
	"github.com/kubelab/kubelab/controller/resourcequota"
	"github.com/kubelab/kubelab/controller/rootca"
	"github.com/kubelab/kubelab/controller/serviceaccount"
	"github.com/kubelab/kubelab/controller/serviceip"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// kubelab's own components, as the trace and RBAC see them. Each writes
// through the registry as its identity, as kube's components write
// through the API server with theirs.
var (
	// provisioner makes a joining student's namespace and world.
	provisioner = registry.Controller("classroom-provisioner")
	// seeder makes the lesson's demo objects, at first start and on a
	// lab's reset.
	seeder = registry.Controller("lesson-seeder")
)

// startControllers runs what kube-controller-manager would for the
// resources kubelab serves (namespace deletion, default service accounts,
// the root CA's ConfigMap, garbage collection by owner references), kube-
// apiserver's service-IP repair and,
// unless turned off, the simulated node. They stop with ctx. Several
// replicas may run them at once: every write they make is conditional, so
// they cannot fight.
func (s *Server) startControllers(ctx context.Context, api *kubeapi.API, quotas *quotaStore) {
	namespaces, _ := api.Store(corev1.SchemeGroupVersion.WithResource("namespaces"))
	accounts, _ := api.Store(corev1.SchemeGroupVersion.WithResource("serviceaccounts"))
	configMaps, _ := api.Store(corev1.SchemeGroupVersion.WithResource("configmaps"))
	services, _ := api.Store(corev1.SchemeGroupVersion.WithResource("services"))
	events, _ := api.Store(corev1.SchemeGroupVersion.WithResource("events"))
	s.ipRepair = serviceip.New(serviceip.Config{Services: services, Events: events, Logger: s.log})
	controllers := []interface{ Run(context.Context) }{
		namespace.New(namespaces, api.NamespacedStores, s.log),
		serviceaccount.New(namespaces, accounts, s.log),
		rootca.New(namespaces, configMaps, s.pki.CertPEM(), s.log),
		garbagecollector.New(garbagecollector.Config{Stores: api.Stores, Resolve: ownerStore(api), Logger: s.log}),
		s.ipRepair,
		resourcequota.New(api.NamespacedStores(), quotas.unindexed(), quotaUsage{api: api}, s.log),
	}
	if s.cfg.SimulatedNode {
		nodes, _ := api.Store(corev1.SchemeGroupVersion.WithResource("nodes"))
		pods, _ := api.Store(corev1.SchemeGroupVersion.WithResource("pods"))
		leases, _ := api.Store(coordinationv1.SchemeGroupVersion.WithResource("leases"))
		controllers = append(controllers, kubelet.New(kubelet.Config{Nodes: nodes, Pods: pods, Leases: leases, StartDelay: s.cfg.PodStartDelay, Logger: s.log}))
	}
	for _, c := range controllers {
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			c.Run(ctx)
		}()
	}
}

// ownerStore finds the store of an owner reference's kind: the resource
// of that group and kind served now, at any version (they share a store).
func ownerStore(api *kubeapi.API) garbagecollector.Resolver {
	return func(apiVersion, kind string) (*etcd3.Store, bool) {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return nil, false
		}
		for _, r := range api.Registry().All() {
			if r.GroupVersion.Group == gv.Group && r.Kind == kind && !strings.Contains(r.Name, "/") {
				return api.Store(r.GroupVersion.WithResource(r.Name))
			}
		}
		return nil, false
	}
}
