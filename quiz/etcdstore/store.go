// Package etcdstore keeps quiz attempts in etcd, outside the Kubernetes
// objects' /registry: state in etcd, as everything kubelab keeps, so
// attempts survive restarts and replicas share them.
//
// Each attempt is a key, /kubelab/quiz/attempts/<student>/<quiz>/<attempt>,
// written when the server issues it and once more when it is submitted.
// Beside them, /kubelab/quiz/ledgers/<student>/<quiz> counts a student's
// attempts at a quiz and names the open one. Every write compares the
// ModRevision of the keys it read, as kube-apiserver's etcd3 store does, so
// two submissions racing cannot both pass the attempt limit, nor one attempt
// be submitted twice.
package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/storage/records"
)

// Prefix is where attempts are kept.
const Prefix = "/kubelab/quiz/attempts/"

// LedgerPrefix is where each student's count of attempts per quiz is kept.
const LedgerPrefix = "/kubelab/quiz/ledgers/"

// ClosedPrefix is where each closed quiz's closing time is kept.
const ClosedPrefix = "/kubelab/quiz/closed/"

// closure is a closed quiz's record.
type closure struct {
	At time.Time `json:"at"`
}

// Close records that quizID closed at at, unless it already has: the first
// close holds, on every replica.
func (s *Store) Close(ctx context.Context, quizID string, at time.Time) (time.Time, error) {
	k := ClosedPrefix + url.PathEscape(quizID)
	for range maxRetries {
		var c closure
		found, _, err := s.records.Get(ctx, k, &c)
		if err != nil || found {
			return c.At, err
		}
		ok, _, err := s.records.PutIfUnchanged(ctx, map[string]int64{k: 0}, map[string]any{k: closure{At: at.UTC()}})
		if err != nil {
			return time.Time{}, err
		}
		if ok {
			return at.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("closing quiz %s: lost %d races in a row", quizID, maxRetries)
}

// ClosedAt is when quizID was closed, or the zero time.
func (s *Store) ClosedAt(ctx context.Context, quizID string) (time.Time, error) {
	var c closure
	_, _, err := s.records.Get(ctx, ClosedPrefix+url.PathEscape(quizID), &c)
	return c.At, err
}

// maxRetries bounds the retries of a write that lost a race: a student has
// few tabs, so more than this is a bug or an attack, not contention.
const maxRetries = 8

// Store is a quiz.Store over an etcd client.
type Store struct {
	records *records.Records
}

var _ quiz.Store = (*Store)(nil)

// New returns a store that uses client.
func New(client *clientv3.Client) *Store { return &Store{records: records.New(client)} }

// Student names and quiz ids are escaped so that a name with a slash
// cannot reach into another student's keys.
func key(student, quizID, id string) string {
	return Prefix + url.PathEscape(student) + "/" + url.PathEscape(quizID) + "/" + url.PathEscape(id)
}

func ledgerKey(student, quizID string) string {
	return LedgerPrefix + url.PathEscape(student) + "/" + url.PathEscape(quizID)
}

// ledger is a student's attempts at one quiz.
type ledger struct {
	// Issued and Submitted count attempts; Open is the attempt issued and
	// not yet submitted, if any.
	Issued    int    `json:"issued"`
	Submitted int    `json:"submitted"`
	Open      string `json:"open,omitempty"`
}

// Issue returns the student's open attempt, or stores a as their next one.
func (s *Store) Issue(ctx context.Context, a *quiz.Attempt, limit int) (*quiz.Attempt, error) {
	lk := ledgerKey(a.Student, a.Quiz)
	for range maxRetries {
		var l ledger
		found, lrev, err := s.records.Get(ctx, lk, &l)
		if err != nil {
			return nil, err
		}
		if !found {
			// Attempts stored before ledgers existed count too.
			prior, err := s.List(ctx, quiz.Filter{Student: a.Student, Quiz: a.Quiz})
			if err != nil {
				return nil, err
			}
			l.Issued, l.Submitted = len(prior), len(prior)
		}
		if l.Open != "" {
			open, err := s.Get(ctx, a.Student, a.Quiz, l.Open)
			if err == nil && open.Open() {
				return open, nil
			}
			if err != nil && !errors.Is(err, quiz.ErrAttemptNotFound) {
				return nil, err
			}
		}
		if limit > 0 && l.Submitted >= limit {
			return nil, quiz.ErrNoAttemptsLeft
		}
		fresh := *a
		fresh.Number = l.Issued + 1
		l.Issued, l.Open = fresh.Number, fresh.ID
		ak := key(a.Student, a.Quiz, a.ID)
		ok, _, err := s.records.PutIfUnchanged(ctx, map[string]int64{lk: lrev, ak: 0}, map[string]any{lk: l, ak: &fresh})
		if err != nil {
			return nil, err
		}
		if ok {
			return &fresh, nil
		}
	}
	return nil, fmt.Errorf("issuing an attempt at %s to %s: lost the race %d times", a.Quiz, a.Student, maxRetries)
}

// Submit records a's answers on the stored open attempt. Only what a
// submission decides is taken from a; the id, number, issue time and
// options stay as the server issued them.
func (s *Store) Submit(ctx context.Context, a *quiz.Attempt, limit int) error {
	lk, ak := ledgerKey(a.Student, a.Quiz), key(a.Student, a.Quiz, a.ID)
	for range maxRetries {
		var l ledger
		var stored quiz.Attempt
		_, lrev, err := s.records.Get(ctx, lk, &l)
		if err != nil {
			return err
		}
		found, arev, err := s.records.Get(ctx, ak, &stored)
		switch {
		case err != nil:
			return err
		case !found:
			return quiz.ErrAttemptNotFound
		case !stored.Open():
			return quiz.ErrAttemptSubmitted
		case limit > 0 && l.Submitted >= limit:
			return quiz.ErrNoAttemptsLeft
		}
		stored.Answers, stored.Result, stored.Lang, stored.Submitted, stored.Class = a.Answers, a.Result, a.Lang, a.Submitted, a.Class
		l.Submitted++
		if l.Open == a.ID {
			l.Open = ""
		}
		ok, _, err := s.records.PutIfUnchanged(ctx, map[string]int64{lk: lrev, ak: arev}, map[string]any{lk: l, ak: &stored})
		if err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("submitting attempt %s: lost the race %d times", a.ID, maxRetries)
}

// Get reads one attempt.
func (s *Store) Get(ctx context.Context, student, quizID, id string) (*quiz.Attempt, error) {
	var a quiz.Attempt
	found, _, err := s.records.Get(ctx, key(student, quizID, id), &a)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, quiz.ErrAttemptNotFound
	}
	return &a, nil
}

// List reads the attempts under the narrowest prefix the filter allows
// (a student's, or a student's for one quiz), and keeps the submitted ones.
func (s *Store) List(ctx context.Context, f quiz.Filter) ([]*quiz.Attempt, error) {
	prefix := Prefix
	if f.Student != "" {
		prefix += url.PathEscape(f.Student) + "/"
		if f.Quiz != "" {
			prefix += url.PathEscape(f.Quiz) + "/"
		}
	}
	var out []*quiz.Attempt
	err := s.records.List(ctx, prefix, func(k string, v []byte, _ int64) error {
		a, err := decode(k, v)
		if err != nil {
			return err
		}
		if !a.Open() && f.Matches(a) {
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Keys sort by escaped name and random id; sort by the names and the
	// order the server issued the attempts in.
	slices.SortFunc(out, func(a, b *quiz.Attempt) int {
		return cmp.Or(cmp.Compare(a.Student, b.Student), cmp.Compare(a.Quiz, b.Quiz),
			cmp.Compare(a.Number, b.Number), a.Submitted.Compare(b.Submitted))
	})
	return out, nil
}

func decode(k string, v []byte) (*quiz.Attempt, error) {
	var a quiz.Attempt
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, fmt.Errorf("decoding attempt %s: %w", strings.TrimPrefix(k, Prefix), err)
	}
	return &a, nil
}
