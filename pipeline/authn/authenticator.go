// Package authn authenticates requests by bearer token, as kube-apiserver
// does with --token-auth-file plus anonymous requests: a request without a
// token is system:anonymous (the authorizer decides what it may do), a
// request with a token kubelab does not know is 401 Unauthorized. Tokens
// are kept only as SHA-256 hashes, in memory and in etcd.
package authn

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
)

// Cache lifetimes: a token's identity is reused for CacheTTL, so a burst of
// requests costs one etcd read; an unknown token is remembered for less,
// so a token minted on another replica works within seconds.
const (
	DefaultCacheTTL         = 10 * time.Second
	DefaultNegativeCacheTTL = 2 * time.Second
	DefaultMaxCached        = 10000
)

// Config says where tokens come from.
type Config struct {
	// Static tokens are checked first, in memory.
	Static *StaticTokens
	// Store holds minted tokens; nil means only static tokens are valid.
	Store            TokenStore
	CacheTTL         time.Duration
	NegativeCacheTTL time.Duration
	// MaxCached bounds the cache, so random tokens cannot grow memory.
	MaxCached int
	// Now is the clock, for tests; nil is time.Now.
	Now func() time.Time
}

// Authenticator is the pipeline's authentication stage.
type Authenticator struct {
	cfg   Config
	mu    sync.Mutex
	cache map[string]cached
	calls singleflight.Group
	// mints limits how often each user mints tokens (see mintLimits).
	mints mintLimits
}

type cached struct {
	user    pipeline.User
	ok      bool
	expires time.Time
}

var _ pipeline.Authenticator = (*Authenticator)(nil)

// New returns an authenticator.
func New(cfg Config) *Authenticator {
	if cfg.Static == nil {
		cfg.Static = NewStaticTokens()
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.NegativeCacheTTL <= 0 {
		cfg.NegativeCacheTTL = DefaultNegativeCacheTTL
	}
	if cfg.MaxCached <= 0 {
		cfg.MaxCached = DefaultMaxCached
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Authenticator{cfg: cfg, cache: map[string]cached{}}
}

// wsProtocolPrefix carries a bearer token in a websocket's
// Sec-WebSocket-Protocol, since browsers cannot set Authorization on a
// websocket; the format is kube-apiserver's.
const wsProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// AuthenticateRequest implements pipeline.Authenticator. No token: the
// anonymous user, ok. A token kubelab knows: its user, ok, and the
// Authorization header removed so nothing later can reuse it. An empty or
// unknown token: pipeline.Unauthorized(). A store failure: that error.
func (a *Authenticator) AuthenticateRequest(r *http.Request) (pipeline.User, bool, error) {
	token, found, err := bearerToken(r)
	if err != nil {
		return pipeline.User{}, false, err
	}
	if !found {
		return a.authenticateSession(r)
	}
	u, ok, err := a.AuthenticateToken(r.Context(), token)
	if err != nil {
		return pipeline.User{}, false, err
	}
	if !ok {
		return pipeline.User{}, false, pipeline.Unauthorized()
	}
	r.Header.Del("Authorization")
	return u, true, nil
}

// crossOrigin refuses state-changing requests that another site's page
// makes with the browser's cookie (CSRF): a cookie, unlike a bearer
// header, is sent by the browser whoever wrote the page.
var crossOrigin = http.NewCrossOriginProtection()

// authenticateSession: a request without a bearer token may carry the
// browser's session cookie. An unknown or expired session is anonymous,
// not an error, so the browser is simply asked to sign in again.
func (a *Authenticator) authenticateSession(r *http.Request) (pipeline.User, bool, error) {
	c, err := r.Cookie(SessionCookieName(r))
	if err != nil || c.Value == "" {
		return pipeline.Anonymous(), true, nil
	}
	if err := crossOrigin.Check(r); err != nil {
		return pipeline.User{}, false, apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("a session cookie is honoured only on requests from kubelab's own pages: %w", err))
	}
	u, ok, err := a.AuthenticateToken(r.Context(), c.Value)
	if err != nil {
		return pipeline.User{}, false, err
	}
	if !ok {
		return pipeline.Anonymous(), true, nil
	}
	return u, true, nil
}

// bearerToken finds the request's token, as kube's bearer-token and
// websocket-protocol authenticators do: another scheme (Basic) is no
// token at all, an empty bearer token is invalid.
func bearerToken(r *http.Request) (string, bool, error) {
	if auth := strings.TrimSpace(r.Header.Get("Authorization")); auth != "" {
		parts := strings.SplitN(auth, " ", 3)
		if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
			return "", false, nil
		}
		if parts[1] == "" {
			return "", false, pipeline.Unauthorized()
		}
		return parts[1], true, nil
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "", false, nil
	}
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			p = strings.TrimSpace(p)
			if !strings.HasPrefix(p, wsProtocolPrefix) {
				continue
			}
			token, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p[len(wsProtocolPrefix):], "="))
			if err != nil || len(token) == 0 {
				return "", false, pipeline.Unauthorized()
			}
			return string(token), true, nil
		}
	}
	return "", false, nil
}

// AuthenticateToken says whom token stands for: static tokens first, then
// the store, through a short-lived cache. Concurrent lookups of one token
// share a single store read.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (pipeline.User, bool, error) {
	hash := Hash(token)
	if e, ok := a.cfg.Static.Lookup(hash); ok {
		return e.user(), true, nil
	}
	if a.cfg.Store == nil {
		return pipeline.User{}, false, nil
	}
	now := a.cfg.Now()
	a.mu.Lock()
	c, hit := a.cache[hash]
	a.mu.Unlock()
	if hit && now.Before(c.expires) {
		return c.user, c.ok, nil
	}
	v, err, _ := a.calls.Do(hash, func() (any, error) {
		e, ok, err := a.cfg.Store.Lookup(context.WithoutCancel(ctx), hash)
		if err != nil {
			return nil, err
		}
		now := a.cfg.Now()
		c := cached{ok: ok && !e.expired(now) && a.parentLive(e), expires: now.Add(a.cfg.NegativeCacheTTL)}
		if c.ok {
			// Cached no longer than the token lives.
			c.user, c.expires = e.user(), now.Add(a.cfg.CacheTTL)
			if !e.Expires.IsZero() && e.Expires.Before(c.expires) {
				c.expires = e.Expires
			}
		}
		a.remember(hash, c)
		return c, nil
	})
	if err != nil {
		return pipeline.User{}, false, err
	}
	c = v.(cached)
	return c.user, c.ok, nil
}

// parentLive: a token minted from a static token works only while that
// static token does.
func (a *Authenticator) parentLive(e Entry) bool {
	return e.Parent == "" || a.cfg.Static.HasParent(e.Parent)
}

// forget drops hashes from the cache, so revoked tokens stop working here at once.
func (a *Authenticator) forget(hashes ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range hashes {
		delete(a.cache, h)
	}
}

func (a *Authenticator) remember(hash string, c cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= a.cfg.MaxCached {
		now := a.cfg.Now()
		for h, old := range a.cache {
			if !now.Before(old.expires) {
				delete(a.cache, h)
			}
		}
		if len(a.cache) >= a.cfg.MaxCached {
			clear(a.cache) // a flood of fresh tokens: start over rather than grow
		}
	}
	a.cache[hash] = c
}

// ErrNoStore is returned by Mint and Revoke without a TokenStore.
var ErrNoStore = errors.New("no token store: only static tokens are configured")

// DefaultTokenLifetime is how long a minted token works: a student's
// session and kubeconfig, for the length of a course.
const DefaultTokenLifetime = 30 * 24 * time.Hour

// Mint creates a token for u (a student signing in) that works for
// DefaultTokenLifetime, and stores its hash. It starts a new sign-in.
func (a *Authenticator) Mint(ctx context.Context, u pipeline.User) (string, error) {
	return a.MintFor(ctx, u, DefaultTokenLifetime)
}

// MintFor creates a token for u that works for lifetime, in a new sign-in,
// and stores its hash. The token itself is returned once and kept nowhere.
func (a *Authenticator) MintFor(ctx context.Context, u pipeline.User, lifetime time.Duration) (string, error) {
	if lifetime <= 0 {
		return "", fmt.Errorf("a token's lifetime must be positive, not %s", lifetime)
	}
	now := a.cfg.Now().UTC()
	e := Entry{User: u.Name, UID: u.UID, Groups: u.Groups, Created: now, Expires: now.Add(lifetime), SignIn: randomHex(16)}
	return a.store(ctx, e)
}

// store mints a token for e and stores its hash.
func (a *Authenticator) store(ctx context.Context, e Entry) (string, error) {
	if a.cfg.Store == nil {
		return "", ErrNoStore
	}
	token := randomHex(32)
	if err := a.cfg.Store.Add(ctx, Hash(token), e); err != nil {
		return "", err
	}
	return token, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// Revoke removes a minted token. This server forgets it at once; other
// replicas sharing the etcd stop accepting it within CacheTTL.
func (a *Authenticator) Revoke(ctx context.Context, token string) error {
	if a.cfg.Store == nil {
		return ErrNoStore
	}
	hash := Hash(token)
	if err := a.cfg.Store.Remove(ctx, hash); err != nil {
		return err
	}
	a.forget(hash)
	return nil
}

// RevokeUser revokes every minted token of the user that carries group
// (a student removed from the class: their sessions and kubeconfigs, in
// every sign-in), on this server at once, on replicas sharing the etcd
// within CacheTTL. The group keeps an instructor's sessions, had they the
// same name, out of it.
func (a *Authenticator) RevokeUser(ctx context.Context, user, group string) error {
	if a.cfg.Store == nil {
		return ErrNoStore
	}
	hashes, err := a.cfg.Store.RemoveUser(ctx, user, group)
	if err != nil {
		return err
	}
	a.forget(hashes...)
	return nil
}
