package authn_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestHandWrittenEntriesAuthenticateNothing: whoever reaches etcd and
// writes an entry under /kubelab/tokens/ by hand (group system:masters,
// no expiry; or bytes that are no entry at all) gets no identity from it.
// Minted entries, which always carry an expiry, still work.
func TestHandWrittenEntriesAuthenticateNothing(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	a := authn.New(authn.Config{Store: authn.NewEtcdTokens(etcd.Client())})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	forever, _ := json.Marshal(authn.Entry{User: "mallory", Groups: []string{"system:masters"}, Created: time.Now()})
	for name, value := range map[string]string{
		"no expiry":         string(forever),
		"corrupt":           `{"user":"mallory","groups":["system:masters"],`,
		"expiry not a time": `{"user":"mallory","groups":["system:masters"],"expires":"never"}`,
	} {
		t.Run(name, func(t *testing.T) {
			token := "hand-written-" + name
			if _, err := etcd.Client().Put(ctx, authn.TokenPrefix+authn.Hash(token), value); err != nil {
				t.Fatal(err)
			}
			u, ok, err := a.AuthenticateToken(ctx, token)
			if ok || err != nil {
				t.Fatalf("AuthenticateToken = %+v, %v, %v; want not authenticated and no error", u, ok, err)
			}
			r := httptest.NewRequest(http.MethodGet, "/api/v1/secrets", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			if u, _, err := a.AuthenticateRequest(r); err == nil {
				t.Fatalf("a request with the token is %+v, want 401", u)
			}
		})
	}
	t.Run("minted", func(t *testing.T) {
		token, err := a.Mint(ctx, pipeline.User{Name: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := etcd.Client().Get(ctx, authn.TokenPrefix+authn.Hash(token))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("minted entry: %v, %d keys", err, len(resp.Kvs))
		}
		var e authn.Entry
		if err := json.Unmarshal(resp.Kvs[0].Value, &e); err != nil || e.Expires.IsZero() {
			t.Fatalf("minted entry %s has no expiry (%v)", resp.Kvs[0].Value, err)
		}
		if u, ok, err := a.AuthenticateToken(ctx, token); !ok || err != nil || u.Name != "alice" {
			t.Fatalf("minted token: %+v, %v, %v", u, ok, err)
		}
	})
}
