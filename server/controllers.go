package server

import (
	"context"

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
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/frontdoor"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// kubelab's own components, as the trace and RBAC see them. Each writes
// through the registry as its identity, as kube's components write
// through the API server with theirs.
var (
	// provisioner makes a joining student's namespace and world.
	provisioner = registry.Controller("classroom-provisioner")
)

// startControllers runs what kube-controller-manager would for the
// resources kubelab serves (namespace deletion, default service accounts,
// the root CA's ConfigMap, garbage collection by owner references), kube-
// apiserver's service-IP repair and, unless turned off, the simulated
// node. Each acts through the registry as its own identity, so its writes
// are admitted, validated and traced as kube's components' are. They stop
// with ctx. Several replicas may run them at once: every write they make
// is conditional, so they cannot fight.
func (s *Server) startControllers(ctx context.Context, api *kubeapi.API, quotas *frontdoor.QuotaStore) {
	reg := api.Registry()
	store := func(gvr schema.GroupVersionResource) *registry.Store {
		st, _ := reg.Store(gvr)
		return st
	}
	core := corev1.SchemeGroupVersion
	namespaces, accounts, configMaps := store(core.WithResource("namespaces")), store(core.WithResource("serviceaccounts")), store(core.WithResource("configmaps"))
	s.ipRepair = serviceip.New(serviceip.Config{Services: store(core.WithResource("services")), Events: store(core.WithResource("events")), Logger: s.log})
	type run = func(context.Context)
	controllers := []struct {
		as  pipeline.User
		run run
	}{
		{registry.Controller("namespace-controller"), namespace.New(namespaces, reg.NamespacedStores, s.log).Run},
		{registry.Controller("service-account-controller"), serviceaccount.New(namespaces, accounts, s.log).Run},
		{registry.Controller("root-ca-cert-publisher"), rootca.New(namespaces, configMaps, s.pki.CertPEM(), s.log).Run},
		{registry.Controller("generic-garbage-collector"), garbagecollector.New(garbagecollector.Config{Stores: reg.Stores, Resolve: garbagecollector.ServedBy(reg), Logger: s.log}).Run},
		// The service-IP repair loop is kube-apiserver's own.
		{registry.APIServer, s.ipRepair.Run},
		{registry.Controller("resourcequota-controller"), resourcequota.New(reg.NamespacedStores(), quotas.Unindexed(), frontdoor.Usage{API: api}, s.log).Run},
	}
	if s.cfg.SimulatedNode {
		node := kubelet.New(kubelet.Config{Cluster: kubelet.OnRegistry(store(core.WithResource("nodes")), store(core.WithResource("pods")),
			store(coordinationv1.SchemeGroupVersion.WithResource("leases"))), StartDelay: s.cfg.PodStartDelay, Logger: s.log})
		controllers = append(controllers, struct {
			as  pipeline.User
			run run
		}{registry.Node(kubelet.NodeName), node.Run})
	}
	for _, c := range controllers {
		s.background.Go(func() { c.run(registry.WithUser(ctx, c.as)) })
	}
	s.log.Debug("controllers started", "count", len(controllers))
}
