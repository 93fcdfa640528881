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
	"github.com/kubelab/kubelab/storage/records"
)

// Prefix is where progress is kept.
const Prefix = "/kubelab/labs/progress/"

// Store is a lab.Store over an etcd client.
type Store struct {
	records *records.Records
}

var _ labs.Store = (*Store)(nil)

// New returns a store that uses client.
func New(client *clientv3.Client) *Store { return &Store{records: records.New(client)} }

// A name is escaped so that a slash in it cannot reach another student's key.
func key(user string) string { return Prefix + url.PathEscape(user) }

// Get reads user's progress.
func (s *Store) Get(ctx context.Context, user string) (*labs.Progress, error) {
	var p labs.Progress
	found, rev, err := s.records.Get(ctx, key(user), &p)
	if err != nil {
		return nil, fmt.Errorf("reading lab progress: %w", err)
	}
	if !found {
		return nil, labs.ErrNotFound
	}
	return withRevision(&p, rev), nil
}

// Put writes p whole, in a transaction guarded by the revision it was
// read at: replicas sharing the etcd may check the same student at once,
// and the later write must not undo the earlier one.
func (s *Store) Put(ctx context.Context, p *labs.Progress) error {
	k := key(p.User)
	ok, rev, err := s.records.PutIfUnchanged(ctx, map[string]int64{k: p.Revision}, map[string]any{k: p})
	if err != nil {
		return fmt.Errorf("storing lab progress: %w", err)
	}
	if !ok {
		return labs.ErrConflict
	}
	p.Revision = rev
	return nil
}

// List reads everyone's progress.
func (s *Store) List(ctx context.Context) ([]*labs.Progress, error) {
	var out []*labs.Progress
	err := s.records.List(ctx, Prefix, func(k string, v []byte, rev int64) error {
		var p labs.Progress
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decoding lab progress %s: %w", k, err)
		}
		out = append(out, withRevision(&p, rev))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// withRevision gives p the revision it was read at, and an empty set of
// labs rather than none.
func withRevision(p *labs.Progress, rev int64) *labs.Progress {
	p.Revision = rev
	if p.Labs == nil {
		p.Labs = map[string]*labs.LabProgress{}
	}
	return p
}
