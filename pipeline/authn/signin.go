package authn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/kubelab/kubelab/pipeline"
)

// A sign-in is every token minted from one act of signing in: the browser
// session's token and the kubeconfigs downloaded with it. They share a
// sign-in id (Entry.SignIn), so signing out ends them all, and a sign-in
// holds a bounded number of them.

// MaxKubeconfigsPerSignIn is how many kubeconfig tokens one sign-in may
// hold at once besides its session: enough for a student's laptop, a
// second terminal and a few mistakes, not a pile of forgotten 30-day tokens.
const MaxKubeconfigsPerSignIn = 10

// Each user may mint a burst of MintBurst tokens, then one every
// MintInterval: a script looping on the kubeconfig download (or the
// dashboard's sign-in) is slowed down, not given thousands of tokens.
const (
	MintBurst    = 5
	MintInterval = 10 * time.Second
	// maxMintLimiters bounds the users remembered.
	maxMintLimiters = 10000
)

// Errors of minting within a sign-in.
var (
	// ErrNotSignedIn: the token is not a live minted token with a sign-in
	// (a static token, an old session, or one already signed out).
	ErrNotSignedIn = errors.New("this credential does not belong to a sign-in: sign in again in the browser")
	// ErrTooManyTokens: the sign-in holds MaxKubeconfigsPerSignIn kubeconfigs.
	ErrTooManyTokens = fmt.Errorf("this sign-in already holds %d kubeconfig tokens: use one you downloaded, or sign out (which revokes them all) and sign in again", MaxKubeconfigsPerSignIn)
	// ErrMintRateLimited: the user minted too many tokens lately.
	ErrMintRateLimited = fmt.Errorf("too many tokens minted for this user: wait %s and try again", MintInterval)
)

// MintFrom mints a browser session for whoever parent (a bearer token)
// stands for, for lifetime. From a static token (the instructor's), the new
// token records the parent's fingerprint and dies with it; from a minted
// token, it joins that token's sign-in and keeps its parent.
func (a *Authenticator) MintFrom(ctx context.Context, parent string, lifetime time.Duration) (string, error) {
	if lifetime <= 0 {
		return "", fmt.Errorf("a token's lifetime must be positive, not %s", lifetime)
	}
	now := a.cfg.Now().UTC()
	hash := Hash(parent)
	e, static := a.cfg.Static.Lookup(hash)
	switch {
	case static:
		e.SignIn, e.Parent = randomHex(16), Fingerprint(hash)
	default:
		var err error
		if e, err = a.liveEntry(ctx, hash); err != nil {
			return "", err
		}
		if e.SignIn == "" {
			e.SignIn = randomHex(16)
		}
	}
	if !a.mints.allow(e.User, now) {
		return "", ErrMintRateLimited
	}
	e.Created, e.Expires = now, now.Add(lifetime)
	return a.store(ctx, e)
}

// MintInSignIn mints a token in the sign-in of session (a browser session's
// token), for the same user, for lifetime but no longer than the session:
// the kubeconfig download. It refuses past MaxKubeconfigsPerSignIn and
// past the user's mint rate.
func (a *Authenticator) MintInSignIn(ctx context.Context, session string, lifetime time.Duration) (string, pipeline.User, error) {
	if lifetime <= 0 {
		return "", pipeline.User{}, fmt.Errorf("a token's lifetime must be positive, not %s", lifetime)
	}
	e, err := a.liveEntry(ctx, Hash(session))
	if err != nil {
		return "", pipeline.User{}, err
	}
	if e.SignIn == "" {
		return "", pipeline.User{}, ErrNotSignedIn
	}
	now := a.cfg.Now().UTC()
	if !a.mints.allow(e.User, now) {
		return "", pipeline.User{}, ErrMintRateLimited
	}
	held, err := a.cfg.Store.SignInTokens(ctx, e.SignIn)
	if err != nil {
		return "", pipeline.User{}, err
	}
	// held counts the session too. Two downloads at the same moment can
	// both pass; the mint rate bounds how far past the cap that goes.
	if len(held) > MaxKubeconfigsPerSignIn {
		return "", pipeline.User{}, ErrTooManyTokens
	}
	// No longer than the session: a kubeconfig ends with its sign-in.
	expires := now.Add(lifetime)
	if !e.Expires.IsZero() && e.Expires.Before(expires) {
		expires = e.Expires
	}
	e.Created, e.Expires = now, expires
	token, err := a.store(ctx, e)
	return token, e.user(), err
}

// RevokeSignIn signs token out: every token of its sign-in is revoked (on
// this server at once, on replicas sharing the etcd within CacheTTL). A
// token without a sign-in is revoked alone; an unknown token is no error.
func (a *Authenticator) RevokeSignIn(ctx context.Context, token string) error {
	if a.cfg.Store == nil {
		return ErrNoStore
	}
	hash := Hash(token)
	e, ok, err := a.cfg.Store.Lookup(ctx, hash)
	if err != nil {
		return err
	}
	if ok && e.SignIn != "" {
		hashes, err := a.cfg.Store.RemoveSignIn(ctx, e.SignIn)
		if err != nil {
			return err
		}
		a.forget(hashes...)
	}
	return a.Revoke(ctx, token)
}

// liveEntry reads a minted token's entry from the store, not the cache, so
// that a token revoked on another replica cannot mint more: ErrNotSignedIn
// when it is unknown, expired, or its parent is gone.
func (a *Authenticator) liveEntry(ctx context.Context, hash string) (Entry, error) {
	if a.cfg.Store == nil {
		return Entry{}, ErrNoStore
	}
	e, ok, err := a.cfg.Store.Lookup(ctx, hash)
	if err != nil {
		return Entry{}, err
	}
	if !ok || e.expired(a.cfg.Now()) || !a.parentLive(e) {
		return Entry{}, ErrNotSignedIn
	}
	return e, nil
}

// mintLimits is a token bucket per user name. It lives in this process:
// with several replicas, each allows the rate, which still bounds a
// script by the number of replicas.
type mintLimits struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (l *mintLimits) allow(user string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxMintLimiters {
		l.m = map[string]*rate.Limiter{}
	}
	lim, ok := l.m[user]
	if !ok {
		lim = rate.NewLimiter(rate.Every(MintInterval), MintBurst)
		l.m[user] = lim
	}
	return lim.AllowN(now, 1)
}
