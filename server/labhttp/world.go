package labhttp

import (
	"context"
	"maps"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/storage"
)

// Pods is what the labs read of the pods: lists, at a revision of etcd's
// history too, and where the pods watch cache's window starts. The wiring
// gives the registry's pods store, read with an identity of kubelab's own.
type Pods interface {
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	// WatchWindowStart is the oldest resourceVersion a pods watch can
	// resume from: only the events the cache drops move it (etcd
	// compaction does not).
	WatchWindowStart() int64
}

// world reads the labs' state: the pods through Pods (which decodes the
// protobuf), keys and revisions with the etcd client.
type world struct {
	pods Pods
	etcd *clientv3.Client
}

var _ labs.World = (*world)(nil)

// LabelChanges compares the pods of ns now with the same pods at revision
// rev, read from etcd's history: the change is in the stored state, so it
// counts however it was made.
func (w *world) LabelChanges(ctx context.Context, ns string, rev int64) ([]string, error) {
	now, err := w.pods.List(ctx, storage.ListOptions{Namespace: ns})
	if err != nil {
		return nil, err
	}
	then, err := w.pods.List(ctx, storage.ListOptions{Namespace: ns, ResourceVersion: strconv.FormatInt(rev, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		// Compacted past rev: the old state is gone, so nothing can be
		// compared; the student changes the label again.
		return nil, nil
	}
	before := map[string]metav1.Object{}
	for _, o := range then.Items {
		if m, err := meta.Accessor(o); err == nil {
			before[string(m.GetUID())] = m
		}
	}
	var names []string
	for _, o := range now.Items {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		old, ok := before[string(m.GetUID())]
		if !ok {
			continue
		}
		if !maps.Equal(old.GetLabels(), m.GetLabels()) || !maps.Equal(old.GetAnnotations(), m.GetAnnotations()) {
			names = append(names, m.GetName())
		}
	}
	return names, nil
}

// WatchWindowStart reads the pods watch cache's window.
func (w *world) WatchWindowStart(context.Context) (int64, error) {
	return w.pods.WatchWindowStart(), nil
}

// PodRevisions reads the mod revisions of the keys of ns's pods.
func (w *world) PodRevisions(ctx context.Context, ns string) ([]int64, error) {
	prefix := storage.ResourcePrefix(schema.GroupResource{Resource: "pods"}, false) + "/" + ns + "/"
	resp, err := w.etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	revs := make([]int64, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		revs = append(revs, kv.ModRevision)
	}
	return revs, nil
}

// IsCustomResource looks for the CustomResourceDefinition of resource in
// group where kube keeps it, under its name <resource>.<group>.
func (w *world) IsCustomResource(ctx context.Context, group, resource string) (bool, error) {
	if group == "" || resource == "" {
		return false, nil
	}
	key, err := storage.ObjectKey(crdPrefix, crdResource, false, storage.Key{Name: resource + "." + group})
	if err != nil {
		// Not a name a CRD could have.
		return false, nil
	}
	resp, err := w.etcd.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return false, err
	}
	return resp.Count > 0, nil
}

// crdPrefix is where CustomResourceDefinitions are stored.
var (
	crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	crdPrefix   = storage.ResourcePrefix(crdResource, true)
)

// revision is etcd's current revision.
func (w *world) revision(ctx context.Context) (int64, error) {
	resp, err := w.etcd.Get(ctx, "/registry/namespaces/default", clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}
