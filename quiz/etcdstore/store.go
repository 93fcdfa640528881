// Package etcdstore keeps quiz attempts in etcd, under
// /kubelab/quiz/attempts/<student>/<quiz>/<attempt>, outside the
// Kubernetes objects' /registry: state in etcd, as everything kubelab
// keeps, so attempts survive restarts and replicas share them.
package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/quiz"
)

// Prefix is where attempts are kept.
const Prefix = "/kubelab/quiz/attempts/"

// defaultPageSize bounds each range read of a list, so a big class is read
// in pieces rather than in one response.
const defaultPageSize = 500

// Store is a quiz.Store over an etcd client.
type Store struct {
	client   *clientv3.Client
	pageSize int64
}

var _ quiz.Store = (*Store)(nil)

// New returns a store that uses client.
func New(client *clientv3.Client) *Store { return &Store{client: client, pageSize: defaultPageSize} }

// Student names and quiz ids are escaped so that a name with a slash
// cannot reach into another student's keys.
func key(student, quizID, id string) string {
	return Prefix + url.PathEscape(student) + "/" + url.PathEscape(quizID) + "/" + url.PathEscape(id)
}

// Create puts a new attempt, only if its key does not exist yet.
func (s *Store) Create(ctx context.Context, a *quiz.Attempt) error {
	value, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encoding attempt: %w", err)
	}
	k := key(a.Student, a.Quiz, a.ID)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value))).
		Commit()
	if err != nil {
		return fmt.Errorf("storing attempt: %w", err)
	}
	if !resp.Succeeded {
		return quiz.ErrAttemptExists
	}
	return nil
}

// Get reads one attempt.
func (s *Store) Get(ctx context.Context, student, quizID, id string) (*quiz.Attempt, error) {
	resp, err := s.client.Get(ctx, key(student, quizID, id))
	if err != nil {
		return nil, fmt.Errorf("reading attempt: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, quiz.ErrAttemptNotFound
	}
	return decode(resp.Kvs[0].Key, resp.Kvs[0].Value)
}

// List reads the attempts under the narrowest prefix the filter allows
// (a student's, or a student's for one quiz), a page at a time, at one
// revision so that the pages agree.
func (s *Store) List(ctx context.Context, f quiz.Filter) ([]*quiz.Attempt, error) {
	prefix := Prefix
	if f.Student != "" {
		prefix += url.PathEscape(f.Student) + "/"
		if f.Quiz != "" {
			prefix += url.PathEscape(f.Quiz) + "/"
		}
	}
	end := clientv3.GetPrefixRangeEnd(prefix)
	var out []*quiz.Attempt
	from, rev := prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, from, opts...)
		if err != nil {
			return nil, fmt.Errorf("listing attempts: %w", err)
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			a, err := decode(kv.Key, kv.Value)
			if err != nil {
				return nil, err
			}
			if f.Matches(a) {
				out = append(out, a)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			// Keys sort by escaped name; sort by the names themselves.
			slices.SortFunc(out, func(a, b *quiz.Attempt) int {
				return cmp.Or(cmp.Compare(a.Student, b.Student), cmp.Compare(a.ID, b.ID))
			})
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func decode(k, v []byte) (*quiz.Attempt, error) {
	var a quiz.Attempt
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, fmt.Errorf("decoding attempt %s: %w", strings.TrimPrefix(string(k), Prefix), err)
	}
	return &a, nil
}
