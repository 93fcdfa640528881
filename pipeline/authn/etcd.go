package authn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TokenPrefix is where minted tokens live in etcd, by hash, outside the
// /registry tree that the Kubernetes API serves.
const TokenPrefix = "/kubelab/tokens/"

// SignInPrefix indexes minted tokens by the sign-in they belong to:
// /kubelab/signins/<sign-in id>/<hash>, an empty value on the token's own
// lease, so that sign-out finds every token of a sign-in and an expired
// token leaves the index with its entry.
const SignInPrefix = "/kubelab/signins/"

// leaseSlack keeps an expired token's entry a little past its expiry, so
// that a clock difference between replicas cannot end it early.
const leaseSlack = time.Minute

// EtcdTokens is a TokenStore in etcd: one key per token,
// /kubelab/tokens/<hex sha256>, holding the Entry as JSON.
type EtcdTokens struct {
	client *clientv3.Client
}

var _ TokenStore = (*EtcdTokens)(nil)

// NewEtcdTokens stores tokens through client.
func NewEtcdTokens(client *clientv3.Client) *EtcdTokens { return &EtcdTokens{client: client} }

// Lookup implements TokenStore. An entry kubelab did not write is not
// honoured: every token kubelab mints expires, so an entry without an
// expiry, or one that does not decode, was written behind kubelab's back
// (by whoever reached etcd) and is reported as no token at all. The
// corrupt one is logged, since something is wrong with etcd's data.
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
		slog.WarnContext(ctx, "refusing a token whose entry in etcd is corrupt", "key", TokenPrefix+hash, "error", err)
		return Entry{}, false, nil
	}
	if e.Expires.IsZero() {
		slog.WarnContext(ctx, "refusing a token whose entry in etcd has no expiry; kubelab writes none such", "key", TokenPrefix+hash, "user", e.User)
		return Entry{}, false, nil
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
	var opts []clientv3.OpOption
	var leaseID clientv3.LeaseID
	if !e.Expires.IsZero() {
		// etcd removes the entry itself a while after it expires, so
		// expired tokens do not pile up; the Authenticator refuses them
		// from Expires on.
		ttl := int64((e.Expires.Sub(e.Created) + leaseSlack) / time.Second)
		lease, err := s.client.Grant(ctx, ttl)
		if err != nil {
			return fmt.Errorf("storing token: %w", err)
		}
		leaseID = lease.ID
		opts = append(opts, clientv3.WithLease(leaseID))
	}
	puts := []clientv3.Op{clientv3.OpPut(key, string(data), opts...)}
	if e.SignIn != "" {
		puts = append(puts, clientv3.OpPut(signInKey(e.SignIn, hash), "", opts...))
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(puts...).
		Commit()
	if (err != nil || !resp.Succeeded) && leaseID != 0 {
		_, _ = s.client.Revoke(context.WithoutCancel(ctx), leaseID) // nothing uses it
	}
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

func signInKey(signIn, hash string) string { return SignInPrefix + signIn + "/" + hash }

// SignInTokens implements TokenStore.
func (s *EtcdTokens) SignInTokens(ctx context.Context, signIn string) ([]string, error) {
	prefix := SignInPrefix + signIn + "/"
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("listing the tokens of a sign-in: %w", err)
	}
	hashes := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		hashes = append(hashes, strings.TrimPrefix(string(kv.Key), prefix))
	}
	return hashes, nil
}

// maxOpsPerTxn stays under etcd's default --max-txn-ops (128).
const maxOpsPerTxn = 100

// RemoveSignIn implements TokenStore: every token of the sign-in and its
// index, in transactions of at most maxOpsPerTxn deletes.
func (s *EtcdTokens) RemoveSignIn(ctx context.Context, signIn string) ([]string, error) {
	hashes, err := s.SignInTokens(ctx, signIn)
	if err != nil {
		return nil, err
	}
	var ops []clientv3.Op
	for _, h := range hashes {
		ops = append(ops, clientv3.OpDelete(TokenPrefix+h), clientv3.OpDelete(signInKey(signIn, h)))
	}
	if err := s.deleteAll(ctx, ops); err != nil {
		return nil, fmt.Errorf("revoking the tokens of a sign-in: %w", err)
	}
	return hashes, nil
}

// RemoveUser implements TokenStore. Tokens are kept by hash, not by user,
// so every token is read: a class's few thousand at most, and only when
// an instructor removes a student.
func (s *EtcdTokens) RemoveUser(ctx context.Context, user, group string) ([]string, error) {
	resp, err := s.client.Get(ctx, TokenPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", err)
	}
	var hashes []string
	var ops []clientv3.Op
	for _, kv := range resp.Kvs {
		var e Entry
		if json.Unmarshal(kv.Value, &e) != nil || e.User != user || !slices.Contains(e.Groups, group) {
			continue // a corrupt entry is refused by Lookup anyway
		}
		h := strings.TrimPrefix(string(kv.Key), TokenPrefix)
		hashes = append(hashes, h)
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		if e.SignIn != "" {
			ops = append(ops, clientv3.OpDelete(signInKey(e.SignIn, h)))
		}
	}
	if err := s.deleteAll(ctx, ops); err != nil {
		return nil, fmt.Errorf("revoking the tokens of %s: %w", user, err)
	}
	return hashes, nil
}

// deleteAll runs ops in transactions of at most maxOpsPerTxn.
func (s *EtcdTokens) deleteAll(ctx context.Context, ops []clientv3.Op) error {
	for len(ops) > 0 {
		n := min(len(ops), maxOpsPerTxn)
		if _, err := s.client.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}
