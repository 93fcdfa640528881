package controller

import (
	"context"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// EnsureFunc makes sure one active namespace has what the controller keeps
// in it.
type EnsureFunc func(ctx context.Context, namespace string) error

// PerNamespace is a controller that keeps one object, by name, in every
// active namespace (kube's service-account and root-CA publisher
// controllers): ensure runs for each namespace that appears or changes,
// and again whenever that object in it changes or goes. A namespace being
// deleted is left alone.
type PerNamespace struct {
	namespaces *registry.Store
	ensure     EnsureFunc
	loop       *Loop
	feeds      []*informer.Informer
}

// NewPerNamespace watches namespaces and the objects named objectName in
// objects.
func NewPerNamespace(name string, namespaces, objects *registry.Store, objectName string, ensure EnsureFunc, log *slog.Logger) *PerNamespace {
	p := &PerNamespace{namespaces: namespaces, ensure: ensure}
	p.loop = New(name, p.sync, log)
	p.feeds = []*informer.Informer{
		Feed("namespaces", namespaces, func(obj runtime.Object) (string, bool) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp == nil {
				return ns.Name, true
			}
			return "", false
		}, p.loop),
		Feed(objects.Resource.Name, objects, func(obj runtime.Object) (string, bool) {
			if m, err := meta.Accessor(obj); err == nil && m.GetName() == objectName {
				return m.GetNamespace(), true
			}
			return "", false
		}, p.loop),
	}
	return p
}

// Run works until ctx ends, and returns once its feeds have stopped too:
// whoever runs it stops the stores they read after it returns.
func (p *PerNamespace) Run(ctx context.Context) {
	var feeding sync.WaitGroup
	defer feeding.Wait()
	for _, f := range p.feeds {
		feeding.Go(func() { f.Run(ctx) })
	}
	// As kube's controllers wait for their caches to sync: an ensure run
	// before the objects' feed has listed could make the object, see it
	// deleted before that list, and never hear of it again.
	for _, f := range p.feeds {
		select {
		case <-f.Synced():
		case <-ctx.Done():
		}
	}
	p.loop.Run(ctx)
}

func (p *PerNamespace) sync(ctx context.Context, namespace string) error {
	obj, err := p.namespaces.Get(ctx, storage.Key{Name: namespace}, "")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns := obj.(*corev1.Namespace); ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	return p.ensure(ctx, namespace)
}
