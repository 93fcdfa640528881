package frontdoor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/informer"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// QuotaStore is the ResourceQuota plugin's and controller's access to
// the quotas: kubelab's own store of them, and an index of which
// namespaces have any, so that a write where there is none (every write
// outside students' namespaces) reads nothing more from etcd.
type QuotaStore struct {
	// store is read; status writes the quotas' status, through the
	// registry, as kube-apiserver's quota admission writes it.
	store    *registry.EtcdStore
	status   *registry.Store
	index    *quotaIndex
	informer *informer.Informer
}

var _ admission.QuotaStore = (*QuotaStore)(nil)

// startQuotas indexes the quotas until ctx ends.
func startQuotas(ctx context.Context, api *kubeapi.API, log *slog.Logger) *QuotaStore {
	gvr := corev1.SchemeGroupVersion.WithResource("resourcequotas")
	st, _ := api.Store(gvr)
	status, _ := api.Registry().Store(gvr)
	q := &QuotaStore{store: st, status: status, index: &quotaIndex{byNamespace: map[string]int{}}}
	q.informer = informer.New("resourcequotas", st, q.index, log)
	go q.informer.Run(ctx)
	return q
}

// Unindexed reads every namespace's quotas from etcd: for the quota
// controller, which must not miss a quota the index has not seen yet
// (it syncs a namespace on the quota's own creation).
func (s *QuotaStore) Unindexed() *QuotaStore { return &QuotaStore{store: s.store, status: s.status} }

// WaitForSync returns once the index has read every quota.
func (s *QuotaStore) WaitForSync(ctx context.Context) error {
	select {
	case <-s.informer.Synced():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("resourcequotas index: %w", ctx.Err())
	}
}

// Quotas reads the namespace's quotas from etcd, fresh: their status is
// what admission counts from and writes over.
func (s *QuotaStore) Quotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error) {
	if s.index != nil && !s.index.has(namespace) {
		return nil, nil
	}
	list, err := s.store.List(ctx, storage.ListOptions{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.ResourceQuota, 0, len(list.Items))
	for _, obj := range list.Items {
		if q, ok := obj.(*corev1.ResourceQuota); ok {
			out = append(out, q)
		}
	}
	return out, nil
}

// UpdateStatus writes only the status, and only over the version read,
// as kube-apiserver itself.
func (s *QuotaStore) UpdateStatus(ctx context.Context, q *corev1.ResourceQuota) error {
	rv := q.ResourceVersion
	_, err := s.status.Update(registry.WithUser(ctx, registry.APIServer), storage.Key{Namespace: q.Namespace, Name: q.Name},
		registry.UpdateFunc(func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			stored, ok := cur.(*corev1.ResourceQuota)
			if !ok {
				return nil, fmt.Errorf("resourcequotas store holds a %T", cur)
			}
			stored = stored.DeepCopy()
			stored.Status = q.Status
			return stored, nil
		}), registry.UpdateOptions{Subresource: "status", FieldManager: registry.APIServerFieldManager, Preconditions: &storage.Preconditions{ResourceVersion: &rv}})
	return err
}

// Usage counts what a namespace holds, from etcd, through the stores of
// the resources served now (custom resources included).
type Usage struct{ API *kubeapi.API }

var _ admission.QuotaUsage = Usage{}

func (u Usage) Objects(ctx context.Context, gr schema.GroupResource, namespace string) (int64, error) {
	for _, r := range u.API.Registry().All() {
		if r.GroupVersion.Group == gr.Group && r.Name == gr.Resource && r.Namespaced {
			st, ok := u.API.Store(r.GroupVersion.WithResource(r.Name))
			if !ok {
				break
			}
			n, err := st.NamespaceUsage(ctx, namespace)
			return n.Objects, err
		}
	}
	return 0, nil // not served: none stored
}

func (u Usage) StoredBytes(ctx context.Context, namespace string) (int64, error) {
	var total int64
	seen := map[*registry.EtcdStore]bool{} // versions of a group share a store
	for _, st := range u.API.NamespacedStores() {
		if seen[st] {
			continue
		}
		seen[st] = true
		n, err := st.NamespaceUsage(ctx, namespace)
		if err != nil {
			return 0, err
		}
		total += n.Bytes
	}
	return total, nil
}

// quotaIndex counts each namespace's quotas, from an informer.
type quotaIndex struct {
	mu          sync.RWMutex
	byNamespace map[string]int
	keys        map[string]string // namespace/name, to count each once
}

func (x *quotaIndex) has(namespace string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byNamespace[namespace] > 0
}

func (x *quotaIndex) Replace(objs []runtime.Object) {
	x.mu.Lock()
	x.byNamespace, x.keys = map[string]int{}, map[string]string{}
	x.mu.Unlock()
	for _, o := range objs {
		x.Upsert(o)
	}
}

func (x *quotaIndex) Upsert(obj runtime.Object) {
	if q, ok := obj.(*corev1.ResourceQuota); ok {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.keys == nil {
			x.keys = map[string]string{}
		}
		if key := q.Namespace + "/" + q.Name; x.keys[key] == "" {
			x.keys[key] = q.Namespace
			x.byNamespace[q.Namespace]++
		}
	}
}

func (x *quotaIndex) Remove(obj runtime.Object) {
	if q, ok := obj.(*corev1.ResourceQuota); ok {
		x.mu.Lock()
		defer x.mu.Unlock()
		if key := q.Namespace + "/" + q.Name; x.keys[key] != "" {
			delete(x.keys, key)
			if x.byNamespace[q.Namespace]--; x.byNamespace[q.Namespace] <= 0 {
				delete(x.byNamespace, q.Namespace)
			}
		}
	}
}
