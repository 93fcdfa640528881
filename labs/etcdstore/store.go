// Package etcdstore keeps lab progress in etcd, one key per student under
// /kubelab/labs/progress/<student>, beside the quiz attempts and outside
// the Kubernetes objects' /registry: progress survives restarts and
// replicas share it.
package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/labs"
)

// Prefix is where progress is kept.
const Prefix = "/kubelab/labs/progress/"

// defaultPageSize bounds each range read of List, so a big class is read
// in pieces.
const defaultPageSize = 500

// Store is a lab.Store over an etcd client.
type Store struct {
	client   *clientv3.Client
	pageSize int64
}

var _ labs.Store = (*Store)(nil)

// New returns a store that uses client.
func New(client *clientv3.Client) *Store { return &Store{client: client, pageSize: defaultPageSize} }

// A name is escaped so that a slash in it cannot reach another student's key.
func key(user string) string { return Prefix + url.PathEscape(user) }

// Get reads user's progress.
func (s *Store) Get(ctx context.Context, user string) (*labs.Progress, error) {
	resp, err := s.client.Get(ctx, key(user))
	if err != nil {
		return nil, fmt.Errorf("reading lab progress: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, labs.ErrNotFound
	}
	return decode(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// Put writes p whole, in a transaction guarded by the revision it was
// read at: replicas sharing the etcd may check the same student at once,
// and the later write must not undo the earlier one.
func (s *Store) Put(ctx context.Context, p *labs.Progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding lab progress: %w", err)
	}
	k := key(p.User)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", p.Revision)).
		Then(clientv3.OpPut(k, string(b))).
		Commit()
	if err != nil {
		return fmt.Errorf("storing lab progress: %w", err)
	}
	if !resp.Succeeded {
		return labs.ErrConflict
	}
	p.Revision = resp.Header.Revision
	return nil
}

// List reads everyone's progress, a page at a time.
func (s *Store) List(ctx context.Context) ([]*labs.Progress, error) {
	var out []*labs.Progress
	from, end := Prefix, clientv3.GetPrefixRangeEnd(Prefix)
	for {
		resp, err := s.client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(s.pageSize))
		if err != nil {
			return nil, fmt.Errorf("listing lab progress: %w", err)
		}
		for _, kv := range resp.Kvs {
			p, err := decode(kv.Value, kv.ModRevision)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			out = append(out, p)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func decode(b []byte, rev int64) (*labs.Progress, error) {
	var p labs.Progress
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decoding lab progress: %w", err)
	}
	p.Revision = rev
	if p.Labs == nil {
		p.Labs = map[string]*labs.LabProgress{}
	}
	return &p, nil
}
