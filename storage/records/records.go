// Package records keeps kubelab's own records (quiz attempts, lab
// progress) as JSON in etcd, under /kubelab/ beside the Kubernetes objects'
// /registry: so they survive restarts and replicas share them. As
// kube-apiserver's etcd3 store does, a read returns the ModRevision it
// read, a write is a transaction guarded by the revisions read, and a list
// reads its prefix a page at a time, every page at one revision.
package records

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// defaultPageSize bounds each range read of List, so that a big class is
// read in pieces.
const defaultPageSize = 500

// Records reads and writes JSON records over an etcd client.
type Records struct {
	client *clientv3.Client
	// PageSize is how many keys each range read of List asks for.
	PageSize int64
}

// New returns records kept with client.
func New(client *clientv3.Client) *Records {
	return &Records{client: client, PageSize: defaultPageSize}
}

// Get decodes key's value into v and returns the key's ModRevision; found
// is false (and rev 0) if the key does not exist.
func (r *Records) Get(ctx context.Context, key string, v any) (found bool, rev int64, err error) {
	resp, err := r.client.Get(ctx, key)
	if err != nil {
		return false, 0, fmt.Errorf("reading %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return false, 0, nil
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, v); err != nil {
		return false, 0, fmt.Errorf("decoding %s: %w", key, err)
	}
	return true, resp.Kvs[0].ModRevision, nil
}

// PutIfUnchanged writes each of values (encoded as JSON) in one
// transaction, if every key in revs still has the ModRevision given (0:
// the key must not exist). ok is false, and nothing is written, when
// another write came first; rev is the revision of the write.
func (r *Records) PutIfUnchanged(ctx context.Context, revs map[string]int64, values map[string]any) (ok bool, rev int64, err error) {
	cmps := make([]clientv3.Cmp, 0, len(revs))
	for k, rev := range revs {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	ops := make([]clientv3.Op, 0, len(values))
	for k, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return false, 0, fmt.Errorf("encoding %s: %w", k, err)
		}
		ops = append(ops, clientv3.OpPut(k, string(b)))
	}
	resp, err := r.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, 0, fmt.Errorf("storing: %w", err)
	}
	return resp.Succeeded, resp.Header.Revision, nil
}

// List calls each with every key under prefix, in key order, its value
// and ModRevision. It reads a page at a time, every page at the revision
// of the first, so that the pages agree: a write between two pages is in
// none of them.
func (r *Records) List(ctx context.Context, prefix string, each func(key string, value []byte, rev int64) error) error {
	from, end, at := prefix, clientv3.GetPrefixRangeEnd(prefix), int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(r.PageSize)}
		if at != 0 {
			opts = append(opts, clientv3.WithRev(at))
		}
		resp, err := r.client.Get(ctx, from, opts...)
		if err != nil {
			return fmt.Errorf("listing %s: %w", prefix, err)
		}
		if at == 0 {
			// A header carries etcd's current revision, not the one read at.
			at = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if err := each(string(kv.Key), kv.Value, kv.ModRevision); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
