package authn

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TokenPrefix is where minted tokens live in etcd, by hash, outside the
// /registry tree that the Kubernetes API serves.
const TokenPrefix = "/kubelab/tokens/"

// EtcdTokens is a TokenStore in etcd: one key per token,
// /kubelab/tokens/<hex sha256>, holding the Entry as JSON.
type EtcdTokens struct {
	client *clientv3.Client
}

var _ TokenStore = (*EtcdTokens)(nil)

// NewEtcdTokens stores tokens through client.
func NewEtcdTokens(client *clientv3.Client) *EtcdTokens { return &EtcdTokens{client: client} }

// Lookup implements TokenStore.
func (s *EtcdTokens) Lookup(ctx context.Context, hash string) (Entry, bool, error) {
	resp, err := s.client.Get(ctx, TokenPrefix+hash)
	if err != nil {
		return Entry{}, false, fmt.Errorf("token lookup: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Entry{}, false, nil
	}
	var e Entry
	if err := json.Unmarshal(resp.Kvs[0].Value, &e); err != nil {
		return Entry{}, false, fmt.Errorf("token entry %s is corrupt: %w", hash, err)
	}
	return e, true, nil
}

// Add implements TokenStore: a create-only transaction, so a hash is never
// silently reassigned.
func (s *EtcdTokens) Add(ctx context.Context, hash string, e Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := TokenPrefix + hash
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return fmt.Errorf("storing token: %w", err)
	}
	if !resp.Succeeded {
		return ErrTokenExists
	}
	return nil
}

// Remove implements TokenStore.
func (s *EtcdTokens) Remove(ctx context.Context, hash string) error {
	if _, err := s.client.Delete(ctx, TokenPrefix+hash); err != nil {
		return fmt.Errorf("removing token: %w", err)
	}
	return nil
}
