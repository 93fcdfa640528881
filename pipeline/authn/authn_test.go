package authn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/storage/storagetest"
)

const tokenFile = `admin-token,kubelab-admin,0,"system:masters"
teach-token,ada,1001,"instructors,graders"
grade-token,grader,1002
,nobody,1003
`

func request(header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/alice/pods", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

// counting passes through to a real etcd store and counts lookups.
type counting struct {
	authn.TokenStore
	lookups atomic.Int64
}

func (c *counting) Lookup(ctx context.Context, hash string) (authn.Entry, bool, error) {
	c.lookups.Add(1)
	return c.TokenStore.Lookup(ctx, hash)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func setup(t *testing.T) (*authn.Authenticator, *counting, *clock) {
	t.Helper()
	static, err := authn.ParseTokenFile(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	store := &counting{TokenStore: authn.NewEtcdTokens(storagetest.StartEtcd(t).Client())}
	clk := &clock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	return authn.New(authn.Config{Static: static, Store: store, Now: clk.now}), store, clk
}

func TestAuthenticateRequest(t *testing.T) {
	a, _, _ := setup(t)
	student, err := a.Mint(context.Background(), pipeline.User{Name: "alice", UID: "u-alice", Groups: []string{"students"}})
	if err != nil {
		t.Fatal(err)
	}
	ws := base64.RawURLEncoding.EncodeToString([]byte(student))
	for _, tc := range []struct {
		name       string
		req        *http.Request
		wantUser   string
		wantGroups []string
		wantErr    bool
	}{
		{"OK/no credentials is anonymous", request(), pipeline.AnonymousUser, []string{pipeline.AllUnauthenticated}, false},
		{"OK/basic auth is no token", request("Authorization", "Basic YWxpY2U6cHc="), pipeline.AnonymousUser, []string{pipeline.AllUnauthenticated}, false},
		{"OK/static admin", request("Authorization", "Bearer admin-token"), "kubelab-admin", []string{"system:masters", pipeline.AllAuthenticated}, false},
		{"OK/static groups", request("Authorization", "bearer teach-token"), "ada", []string{"instructors", "graders", pipeline.AllAuthenticated}, false},
		{"OK/static no groups", request("Authorization", "Bearer grade-token"), "grader", []string{pipeline.AllAuthenticated}, false},
		{"OK/minted", request("Authorization", "Bearer "+student), "alice", []string{"students", pipeline.AllAuthenticated}, false},
		{"OK/websocket protocol", request("Upgrade", "websocket", "Sec-WebSocket-Protocol", "v4.channel.k8s.io, base64url.bearer.authorization.k8s.io."+ws),
			"alice", []string{"students", pipeline.AllAuthenticated}, false},
		{"ErrUnknownToken", request("Authorization", "Bearer nope"), "", nil, true},
		{"ErrEmptyToken", request("Authorization", "Bearer  x"), "", nil, true},
		{"OK/bare Bearer word is no token", request("Authorization", "Bearer"), pipeline.AnonymousUser, []string{pipeline.AllUnauthenticated}, false},
		{"ErrBadWebsocketToken", request("Upgrade", "websocket", "Sec-WebSocket-Protocol", "base64url.bearer.authorization.k8s.io.!!"), "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := a.AuthenticateRequest(tc.req)
			if tc.wantErr {
				if ok || !apierrors.IsUnauthorized(err) {
					t.Fatalf("got %+v, %v, %v; want 401", u, ok, err)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("got %v, %v", ok, err)
			}
			if u.Name != tc.wantUser || !slices.Equal(u.Groups, tc.wantGroups) {
				t.Fatalf("got %s %v, want %s %v", u.Name, u.Groups, tc.wantUser, tc.wantGroups)
			}
			if tc.req.Header.Get("Authorization") != "" && u.Name != pipeline.AnonymousUser {
				t.Fatal("the Authorization header was left on an authenticated request")
			}
		})
	}
}

func TestParseTokenFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    int
		wantErr bool
	}{
		{"OK/kube format", tokenFile, 3, false},
		{"OK/spaces after commas", "t1, alice, 1, \"a,b\"\n", 1, false},
		{"OK/empty file", "", 0, false},
		{"ErrTwoColumns", "t1,alice\n", 0, true},
		{"ErrBrokenQuote", "t1,alice,1,\"a\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := authn.ParseTokenFile(strings.NewReader(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil || s.Len() != tc.want {
				t.Fatalf("got %v tokens, err %v; want %d", s, err, tc.want)
			}
		})
	}
	s, _ := authn.ParseTokenFile(strings.NewReader("t1, alice, 1, \"a,b\"\n"))
	if e, ok := s.Lookup(authn.Hash("t1")); !ok || e.User != "alice" || !slices.Equal(e.Groups, []string{"a", "b"}) {
		t.Fatalf("lookup by hash: %+v %v", e, ok)
	}
}

// TestMintStoresOnlyTheHash reads etcd directly: the key is the token's
// SHA-256 and nothing stored contains the token.
func TestMintStoresOnlyTheHash(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	a := authn.New(authn.Config{Store: authn.NewEtcdTokens(etcd.Client())})
	token, err := a.Mint(context.Background(), pipeline.User{Name: "alice", UID: "u1", Groups: []string{"students"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(token) != 64 {
		t.Fatalf("token %q is not 32 bytes of hex", token)
	}
	other, _ := a.Mint(context.Background(), pipeline.User{Name: "alice"})
	if other == token {
		t.Fatal("two mints gave one token")
	}
	resp, err := etcd.Client().Get(context.Background(), authn.TokenPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 2 {
		t.Fatalf("%d keys under %s, want 2", len(resp.Kvs), authn.TokenPrefix)
	}
	found := false
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), token) || strings.Contains(string(kv.Value), token) {
			t.Fatalf("the token itself is stored: %s = %s", kv.Key, kv.Value)
		}
		if string(kv.Key) != authn.TokenPrefix+authn.Hash(token) {
			continue
		}
		found = true
		var e authn.Entry
		if err := json.Unmarshal(kv.Value, &e); err != nil || e.User != "alice" || e.UID != "u1" || e.Created.IsZero() || !slices.Equal(e.Groups, []string{"students"}) {
			t.Fatalf("entry %s: %+v %v", kv.Value, e, err)
		}
	}
	if !found {
		t.Fatal("no key named by the token's hash")
	}
}

// TestLookupsAreCached: a burst of requests with one token reads etcd
// once; the cache expires; an unknown token is remembered briefly too.
func TestLookupsAreCached(t *testing.T) {
	a, store, clk := setup(t)
	token, err := a.Mint(context.Background(), pipeline.User{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, ok, err := a.AuthenticateRequest(request("Authorization", "Bearer "+token)); !ok || err != nil {
				t.Errorf("authenticate: %v %v", ok, err)
			}
		})
	}
	wg.Wait()
	clk.advance(authn.DefaultCacheTTL - time.Second)
	if _, ok, _ := a.AuthenticateToken(context.Background(), token); !ok {
		t.Fatal("cached token refused")
	}
	if n := store.lookups.Load(); n != 1 {
		t.Fatalf("%d etcd lookups for one token within the TTL, want 1", n)
	}
	clk.advance(2 * time.Second)
	_, _, _ = a.AuthenticateToken(context.Background(), token)
	if n := store.lookups.Load(); n != 2 {
		t.Fatalf("%d lookups after the TTL, want 2", n)
	}
	for range 3 {
		if _, _, err := a.AuthenticateRequest(request("Authorization", "Bearer unknown")); !apierrors.IsUnauthorized(err) {
			t.Fatalf("unknown token: %v", err)
		}
	}
	if n := store.lookups.Load(); n != 3 {
		t.Fatalf("%d lookups after 3 tries of one unknown token, want 3", n)
	}
	for range 3 {
		_, _, _ = a.AuthenticateRequest(request("Authorization", "Bearer admin-token"))
	}
	if n := store.lookups.Load(); n != 3 {
		t.Fatal("static tokens must not read etcd")
	}
}

func TestRevokeTakesEffectAtOnce(t *testing.T) {
	a, _, _ := setup(t)
	token, err := a.Mint(context.Background(), pipeline.User{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.AuthenticateToken(context.Background(), token); !ok {
		t.Fatal("fresh token refused")
	}
	if err := a.Revoke(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.AuthenticateRequest(request("Authorization", "Bearer "+token)); !apierrors.IsUnauthorized(err) {
		t.Fatalf("revoked token: %v", err)
	}
}

func TestWithoutStoreOnlyStaticTokens(t *testing.T) {
	s := authn.NewStaticTokens()
	s.AddHash(strings.ToUpper(authn.Hash("x")), pipeline.User{Name: "admin", Groups: []string{pipeline.SystemPrivilegedGroup}})
	a := authn.New(authn.Config{Static: s})
	if u, ok, err := a.AuthenticateRequest(request("Authorization", "Bearer x")); !ok || err != nil || u.Name != "admin" {
		t.Fatalf("static by hash: %+v %v %v", u, ok, err)
	}
	if _, err := a.Mint(context.Background(), pipeline.User{Name: "a"}); err != authn.ErrNoStore {
		t.Fatalf("Mint without a store: %v", err)
	}
}

func TestSessionCookie(t *testing.T) {
	m := storagetest.StartEtcd(t)
	a := authn.New(authn.Config{Static: authn.NewStaticTokens(), Store: authn.NewEtcdTokens(m.Client())})
	alice := pipeline.User{Name: "alice", Groups: []string{"kubelab:students"}}
	token, err := a.Mint(context.Background(), alice)
	if err != nil {
		t.Fatal(err)
	}
	withCookie := func(method, value string, header ...string) *http.Request {
		r := httptest.NewRequest(method, "https://lab.example/api/v1/namespaces/alice/pods", nil)
		r.AddCookie(&http.Cookie{Name: authn.SessionCookieName(r), Value: value}) // the __Host- one: https
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Add(header[i], header[i+1])
		}
		return r
	}
	t.Run("OK", func(t *testing.T) {
		u, ok, err := a.AuthenticateRequest(withCookie("GET", token))
		if err != nil || !ok || u.Name != "alice" {
			t.Fatalf("%+v %v %v", u, ok, err)
		}
	})
	t.Run("OKSameOriginPost", func(t *testing.T) {
		u, ok, err := a.AuthenticateRequest(withCookie("POST", token, "Sec-Fetch-Site", "same-origin"))
		if err != nil || !ok || u.Name != "alice" {
			t.Fatalf("%+v %v %v", u, ok, err)
		}
	})
	t.Run("OKUnknownSessionIsAnonymous", func(t *testing.T) {
		u, ok, err := a.AuthenticateRequest(withCookie("GET", "stale"))
		if err != nil || !ok || !u.IsAnonymous() {
			t.Fatalf("%+v %v %v", u, ok, err)
		}
	})
	t.Run("OKBearerWinsOverCookie", func(t *testing.T) {
		bob, _ := a.Mint(context.Background(), pipeline.User{Name: "bob"})
		u, _, err := a.AuthenticateRequest(withCookie("GET", token, "Authorization", "Bearer "+bob))
		if err != nil || u.Name != "bob" {
			t.Fatalf("%+v %v", u, err)
		}
	})
	t.Run("ErrCrossSitePost", func(t *testing.T) {
		_, ok, err := a.AuthenticateRequest(withCookie("POST", token, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"))
		if ok || !apierrors.IsForbidden(err) {
			t.Fatalf("a cross-site POST with the cookie: ok=%v err=%v", ok, err)
		}
	})
	t.Run("ErrCrossOriginDeleteWithoutFetchMetadata", func(t *testing.T) {
		_, ok, err := a.AuthenticateRequest(withCookie("DELETE", token, "Origin", "https://evil.example"))
		if ok || !apierrors.IsForbidden(err) {
			t.Fatalf("a cross-origin DELETE with the cookie: ok=%v err=%v", ok, err)
		}
	})
}

// TestMintedTokensExpire: a token works until its lifetime is over, and is
// refused from then on, even from the cache; etcd holds its entry on a
// lease, so it goes from etcd by itself too.
func TestMintedTokensExpire(t *testing.T) {
	a, _, clk := setup(t)
	token, err := a.MintFor(context.Background(), pipeline.User{Name: "instructor"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour - authn.DefaultCacheTTL/2)
	if _, ok, _ := a.AuthenticateToken(context.Background(), token); !ok {
		t.Fatal("token refused before its hour is over")
	}
	clk.advance(authn.DefaultCacheTTL / 2) // now exactly at expiry, within the cache's TTL
	if _, ok, _ := a.AuthenticateToken(context.Background(), token); ok {
		t.Fatal("token accepted at its expiry")
	}
	if _, err := a.MintFor(context.Background(), pipeline.User{Name: "x"}, 0); err == nil {
		t.Fatal("a token with no lifetime was minted")
	}

	etcd := storagetest.StartEtcd(t)
	b := authn.New(authn.Config{Store: authn.NewEtcdTokens(etcd.Client())})
	if token, err = b.Mint(context.Background(), pipeline.User{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Client().Get(context.Background(), authn.TokenPrefix+authn.Hash(token))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("token entry %+v (%v): want one key on a lease", resp.Kvs, err)
	}
	ttl, err := etcd.Client().TimeToLive(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64((authn.DefaultTokenLifetime + time.Minute) / time.Second); ttl.GrantedTTL != want {
		t.Fatalf("lease granted for %d s, want the token's lifetime and a minute, %d s", ttl.GrantedTTL, want)
	}
}
