package etcd3

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/storage"
)

// Usage is what one namespace's objects of a resource take in etcd.
type Usage struct {
	// Objects is how many there are; Bytes is the sum of their values as
	// stored (encoded, with the storage envelope).
	Objects, Bytes int64
}

// NamespaceUsage reads, consistently, what the objects of namespace take:
// what a ResourceQuota's usage is recalculated from.
func (s *Store) NamespaceUsage(ctx context.Context, namespace string) (Usage, error) {
	prefix, err := storage.ListPrefix(s.cfg.Prefix, s.cfg.Resource, namespace)
	if err != nil {
		return Usage{}, err
	}
	resp, err := s.cfg.Client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return Usage{}, s.etcdError(err)
	}
	u := Usage{Objects: int64(len(resp.Kvs))}
	for _, kv := range resp.Kvs {
		u.Bytes += int64(len(kv.Value))
	}
	return u, nil
}
