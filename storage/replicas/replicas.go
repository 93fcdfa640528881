// Package replicas knows how many kubelab processes serve one etcd, so
// that a limit each process keeps by itself can be its share of the
// class's. Behind the replicas' proxy a student's requests reach every
// replica, and a write budget of each would be that many times the one
// the class was promised.
//
// Each replica holds a key under Prefix bound to a lease it keeps alive:
// one that stops leaves the set at once (its lease is revoked), and one
// that is killed or cut off leaves it when its lease expires, TTL later.
package replicas

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Prefix is where the replicas' keys live, outside the /registry tree the
// Kubernetes API serves.
const Prefix = "/kubelab/replicas/"

// TTL is how long, in seconds, a replica that stopped without leaving
// still counts: long enough that a busy etcd does not drop a live one.
const TTL = 15

// retryAfter is how long Run waits before joining again after etcd
// failed it.
const retryAfter = time.Second

// Set is the replicas sharing an etcd, as this one sees them.
type Set struct {
	client *clientv3.Client
	log    *slog.Logger
	key    string
	count  atomic.Int64
}

// New returns the set seen through client, before Run joins it: it
// counts this replica alone.
func New(client *clientv3.Client, log *slog.Logger) *Set {
	host, _ := os.Hostname()
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	s := &Set{client: client, log: log, key: Prefix + host + "-" + hex.EncodeToString(id)}
	s.count.Store(1)
	return s
}

// Count is how many replicas serve the class, this one included: never
// less than one.
func (s *Set) Count() int { return int(max(1, s.count.Load())) }

// Run joins the set and keeps the count until ctx is done, then leaves
// it. When etcd fails it, the count stays as last seen and Run joins
// again.
func (s *Set) Run(ctx context.Context) {
	for {
		err := s.serve(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("keeping the count of kubelab's replicas; trying again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryAfter):
		}
	}
}

// serve holds this replica's key and follows the others' until ctx is
// done or etcd fails it.
func (s *Set) serve(ctx context.Context) error {
	lease, err := s.client.Grant(ctx, TTL)
	if err != nil {
		return fmt.Errorf("granting a lease: %w", err)
	}
	defer func() {
		// Leave at once rather than TTL later: the others' share grows
		// back as soon as this one stops.
		revokeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, _ = s.client.Revoke(revokeCtx, lease.ID)
	}()
	put, err := s.client.Put(ctx, s.key, "", clientv3.WithLease(lease.ID))
	if err != nil {
		return fmt.Errorf("registering: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	alive, err := s.client.KeepAlive(ctx, lease.ID)
	if err != nil {
		return fmt.Errorf("keeping the lease alive: %w", err)
	}
	events := s.client.Watch(clientv3.WithRequireLeader(ctx), Prefix, clientv3.WithPrefix(), clientv3.WithRev(put.Header.Revision+1))
	if err := s.recount(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-alive:
			if !ok {
				return errors.New("the lease was lost")
			}
		case resp, ok := <-events:
			if !ok {
				return errors.New("the watch of the replicas ended")
			}
			if err := resp.Err(); err != nil {
				return fmt.Errorf("watching the replicas: %w", err)
			}
			if err := s.recount(ctx); err != nil {
				return err
			}
		}
	}
}

// recount counts the replicas' keys.
func (s *Set) recount(ctx context.Context) error {
	resp, err := s.client.Get(ctx, Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("counting the replicas: %w", err)
	}
	s.count.Store(resp.Count)
	return nil
}
