package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// keepInterval is how often the keepers look again for what they keep,
// as kube's system-namespaces controller does.
const keepInterval = time.Minute

// systemObject is an object kube-apiserver makes at start, and its
// manifest. It is created through the registry as kube-apiserver itself,
// as any client's object, so it gets the same defaults (a namespace's
// finalizer and name label, a service's IP families) and a trace.
type systemObject struct {
	key    storage.Key
	create registry.Seed
}

// apiServerFieldManager is the manager of what kube-apiserver writes itself.
const apiServerFieldManager = registry.APIServerFieldManager

// keeper is one of kube-apiserver's start-up controllers that make system
// objects and put them back when they are deleted: it ensures them once
// at start and then every keepInterval (once only when once is set).
// Its post-start hook, of the same name, is done after the first pass.
type keeper struct {
	name    string
	once    bool
	objects []systemObject
	done    atomic.Bool
}

// systemKeepers are kube-apiserver's: the bootstrap controller (the
// default namespace and the kubernetes Service naming the API server, which
// clients such as the e2e suite look for), the system namespaces, kube's
// two system PriorityClasses, and the ConfigMap in which kube-apiserver
// tells aggregated API servers how to authenticate its requests.
func systemKeepers() []*keeper {
	namespace := func(name string) systemObject {
		return systemObject{storage.Key{Name: name}, registry.Seed{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), FieldManager: apiServerFieldManager,
			Manifest: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`}}
	}
	priorityClass := func(name string, value int32, description string) systemObject {
		return systemObject{storage.Key{Name: name}, registry.Seed{Resource: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), FieldManager: apiServerFieldManager,
			Manifest: fmt.Sprintf(`{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":%q},"value":%d,"description":%q}`, name, value, description)}}
	}
	return []*keeper{
		{name: "bootstrap-controller", objects: []systemObject{
			namespace("default"),
			{storage.Key{Namespace: "default", Name: "kubernetes"}, registry.Seed{Resource: corev1.SchemeGroupVersion.WithResource("services"), Namespace: "default", FieldManager: apiServerFieldManager,
				Manifest: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"kubernetes","labels":{"component":"apiserver","provider":"kubernetes"}},"spec":{"clusterIP":"10.96.0.1","ports":[{"name":"https","port":443,"protocol":"TCP","targetPort":6443}],"sessionAffinity":"None","type":"ClusterIP"}}`}},
		}},
		{name: "start-system-namespaces-controller", objects: []systemObject{
			namespace("kube-system"), namespace("kube-public"), namespace("kube-node-lease"),
		}},
		{name: "scheduling/bootstrap-system-priority-classes", once: true, objects: []systemObject{
			priorityClass("system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."),
			priorityClass("system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
		}},
		// kubelab authenticates no client certificates and its aggregator
		// vouches for users with a bearer token rather than a front-proxy
		// CA, so, as kube-apiserver with neither configured, it publishes
		// the ConfigMap with nothing in it.
		{name: "start-cluster-authentication-info-controller", objects: []systemObject{
			{storage.Key{Namespace: "kube-system", Name: "extension-apiserver-authentication"}, registry.Seed{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: "kube-system", FieldManager: apiServerFieldManager,
				Manifest: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"extension-apiserver-authentication","namespace":"kube-system"}}`}},
		}},
	}
}

// ensure creates what is missing among k's objects. A namespace being
// deleted still exists: it is made again once it is gone.
func (s *Server) ensure(ctx context.Context, k *keeper) error {
	ctx = registry.WithUser(ctx, registry.APIServer)
	var errs []error
	for _, o := range k.objects {
		store, ok := s.api.Registry().Store(o.create.Resource)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s is not served", k.name, o.create.Resource))
			continue
		}
		_, err := store.Get(ctx, o.key, "")
		if apierrors.IsNotFound(err) {
			err = s.api.Registry().Make(ctx, []registry.Seed{o.create})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k.name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	k.done.Store(true)
	return nil
}

// startKeepers makes the system objects now (the demo's seeding needs the
// default namespace), then keeps them until shutdown begins.
func (s *Server) startKeepers(ctx context.Context) error {
	s.keepers = systemKeepers()
	for _, k := range s.keepers {
		if err := s.ensure(ctx, k); err != nil {
			return err
		}
	}
	keepCtx, stop := context.WithCancel(s.backgroundCtx)
	var wg sync.WaitGroup
	// Before the API's stores stop (hooks run in reverse order).
	s.OnShutdown(func(context.Context) { stop(); wg.Wait() })
	for _, k := range s.keepers {
		if k.once {
			continue
		}
		wg.Go(func() {
			t := time.NewTicker(keepInterval)
			defer t.Stop()
			for {
				select {
				case <-keepCtx.Done():
					return
				case <-t.C:
				}
				if err := s.ensure(keepCtx, k); err != nil && keepCtx.Err() == nil {
					s.log.Warn("keeping system objects", "err", err)
				}
			}
		})
	}
	return nil
}
