// Package resourcequota is the part of kube's resource-quota controller
// that kubelab needs: when objects in a namespace change or go, each of
// its ResourceQuotas' status.used is recalculated from what is stored.
// The ResourceQuota admission plugin counts a request in before it is
// stored; this counts out what was deleted, shrank, or was admitted but
// never stored.
package resourcequota

import (
	"context"
	"log/slog"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/controller"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/registry"
)

// Controller recalculates the quotas of the namespaces whose objects change.
type Controller struct {
	quotas admission.QuotaStore
	usage  admission.QuotaUsage
	loop   *controller.Loop
	feeds  []interface{ Run(context.Context) }
}

// New watches every store of stores (each once) for changes, by namespace.
func New(stores []*registry.Store, quotas admission.QuotaStore, usage admission.QuotaUsage, log *slog.Logger) *Controller {
	c := &Controller{quotas: quotas, usage: usage}
	c.loop = controller.New("resourcequota", c.sync, log)
	seen := map[*registry.Store]bool{}
	for _, st := range stores {
		if seen[st] || !st.Resource.Namespaced {
			continue
		}
		seen[st] = true
		c.feeds = append(c.feeds, controller.Feed("resourcequota:"+st.GroupResource().String(), st, namespaceOf, c.loop))
	}
	return c
}

func namespaceOf(obj runtime.Object) (string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() == "" {
		return "", false
	}
	return m.GetNamespace(), true
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	for _, f := range c.feeds {
		go f.Run(ctx)
	}
	c.loop.Run(ctx)
}

// sync writes each quota of namespace whose status is not what is stored
// now. A conflict (an admission counted a request in meanwhile) is an
// error, so the namespace is synced again, from the new status.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	quotas, err := c.quotas.Quotas(ctx, namespace)
	if err != nil {
		return err
	}
	for _, q := range quotas {
		used, err := admission.QuotaUsed(ctx, c.usage, namespace, q.Spec.Hard)
		if err != nil {
			return err
		}
		if apiequality.Semantic.DeepEqual(used, q.Status.Used) && apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
			continue
		}
		q = q.DeepCopy()
		q.Status.Hard, q.Status.Used = q.Spec.Hard, used
		if err := c.quotas.UpdateStatus(ctx, q); err != nil {
			return err
		}
	}
	return nil
}
