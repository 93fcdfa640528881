package authn_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func mustMint(t *testing.T, a *authn.Authenticator, session string) string {
	t.Helper()
	token, _, err := a.MintInSignIn(context.Background(), session, authn.DefaultTokenLifetime)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	return token
}

func works(a *authn.Authenticator, token string) bool {
	_, ok, err := a.AuthenticateToken(context.Background(), token)
	return ok && err == nil
}

// Signing out ends the session and every kubeconfig minted with it, even
// where this server had them cached, and nothing of another sign-in.
func TestRevokeSignInEndsEveryTokenOfTheSignIn(t *testing.T) {
	a, _, _ := setup(t)
	ctx := context.Background()
	alice := pipeline.User{Name: "alice", Groups: []string{"students"}}
	session, err := a.Mint(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	kube1, kube2 := mustMint(t, a, session), mustMint(t, a, session)
	otherSession, _ := a.Mint(ctx, alice)
	otherKube := mustMint(t, a, otherSession)
	for _, tok := range []string{session, kube1, kube2, otherSession, otherKube} {
		if !works(a, tok) { // and now cached
			t.Fatal("a fresh token is refused")
		}
	}
	if err := a.RevokeSignIn(ctx, session); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"session": session, "kubeconfig 1": kube1, "kubeconfig 2": kube2} {
		if works(a, tok) {
			t.Errorf("the %s works after sign-out", name)
		}
	}
	if !works(a, otherSession) || !works(a, otherKube) {
		t.Error("signing out ended another sign-in")
	}
	if _, _, err := a.MintInSignIn(ctx, session, time.Hour); !errors.Is(err, authn.ErrNotSignedIn) {
		t.Errorf("a signed-out session minted a kubeconfig: %v", err)
	}
}

// Removing a student ends every token of theirs, in every sign-in, even
// where this server had them cached; not another student's, nor the
// tokens of someone of the same name outside the group.
func TestRevokeUserEndsEveryTokenOfTheUser(t *testing.T) {
	a, _, _ := setup(t)
	ctx := context.Background()
	alice := pipeline.User{Name: "alice", Groups: []string{"students"}}
	session1, _ := a.Mint(ctx, alice)
	session2, _ := a.Mint(ctx, alice)
	kube := mustMint(t, a, session1)
	bob, _ := a.Mint(ctx, pipeline.User{Name: "bob", Groups: []string{"students"}})
	notStudent, _ := a.Mint(ctx, pipeline.User{Name: "alice", Groups: []string{"instructors"}})
	for _, tok := range []string{session1, session2, kube, bob, notStudent} {
		if !works(a, tok) { // and now cached
			t.Fatal("a fresh token is refused")
		}
	}
	if err := a.RevokeUser(ctx, "alice", "students"); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"session 1": session1, "session 2": session2, "kubeconfig": kube} {
		if works(a, tok) {
			t.Errorf("alice's %s works after she was removed", name)
		}
	}
	if !works(a, bob) || !works(a, notStudent) {
		t.Error("removing alice ended a token of someone else")
	}
}

// A sign-in holds at most MaxKubeconfigsPerSignIn kubeconfigs; each lives
// no longer than its session.
func TestKubeconfigsPerSignInAreBounded(t *testing.T) {
	a, store, clk := setup(t)
	ctx := context.Background()
	session, err := a.MintFor(ctx, pipeline.User{Name: "bob"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for range authn.MaxKubeconfigsPerSignIn {
		clk.advance(authn.MintInterval) // within the rate
		last = mustMint(t, a, session)
	}
	clk.advance(authn.MintInterval)
	if _, _, err := a.MintInSignIn(ctx, session, time.Hour); !errors.Is(err, authn.ErrTooManyTokens) {
		t.Fatalf("kubeconfig %d: %v, want ErrTooManyTokens", authn.MaxKubeconfigsPerSignIn+1, err)
	}
	e, ok, err := store.Lookup(ctx, authn.Hash(last))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	sessionEntry, _, _ := store.Lookup(ctx, authn.Hash(session))
	if e.Expires.After(sessionEntry.Expires) || e.SignIn != sessionEntry.SignIn || e.User != "bob" {
		t.Fatalf("kubeconfig %+v outlives or leaves its session %+v", e, sessionEntry)
	}
}

// Minting is a token bucket per user: a burst, then one per MintInterval,
// whoever else mints.
func TestMintingIsRateLimitedPerUser(t *testing.T) {
	a, _, clk := setup(t)
	ctx := context.Background()
	carol, _ := a.Mint(ctx, pipeline.User{Name: "carol"})
	dave, _ := a.Mint(ctx, pipeline.User{Name: "dave"})
	for range authn.MintBurst {
		mustMint(t, a, carol)
	}
	if _, _, err := a.MintInSignIn(ctx, carol, time.Hour); !errors.Is(err, authn.ErrMintRateLimited) {
		t.Fatalf("mint %d in a burst: %v, want ErrMintRateLimited", authn.MintBurst+1, err)
	}
	mustMint(t, a, dave)
	clk.advance(authn.MintInterval)
	mustMint(t, a, carol)
}

// A dashboard session minted from the instructor's token, and a kubeconfig
// minted in it, work while that token is configured and are refused by a
// server that has another instructor token: a restart with a new
// --instructor-token ends them.
func TestTokensFromAStaticTokenDieWithIt(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	ctx := context.Background()
	server := func(instructorToken string) *authn.Authenticator {
		static := authn.NewStaticTokens()
		static.AddToken(instructorToken, pipeline.User{Name: "kubelab-instructor", Groups: []string{"kubelab:instructors"}})
		return authn.New(authn.Config{Static: static, Store: authn.NewEtcdTokens(etcd.Client())})
	}
	first := server("instructor-token-one-0123")
	session, err := first.MintFrom(ctx, "instructor-token-one-0123", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kube := mustMint(t, first, session)
	if u, ok, _ := first.AuthenticateToken(ctx, session); !ok || u.Name != "kubelab-instructor" {
		t.Fatalf("the dashboard session: %+v %v", u, ok)
	}
	if _, err := first.MintFrom(ctx, "not-a-token-of-anyone", time.Hour); !errors.Is(err, authn.ErrNotSignedIn) {
		t.Fatalf("minted from an unknown token: %v", err)
	}

	restartedSame := server("instructor-token-one-0123")
	if !works(restartedSame, session) || !works(restartedSame, kube) {
		t.Fatal("a restart with the same instructor token ended its sessions")
	}
	restartedNew := server("instructor-token-two-4567")
	if works(restartedNew, session) || works(restartedNew, kube) {
		t.Fatal("the old instructor token's session outlives it")
	}
	if _, _, err := restartedNew.MintInSignIn(ctx, session, time.Hour); !errors.Is(err, authn.ErrNotSignedIn) {
		t.Fatalf("the old session minted a kubeconfig: %v", err)
	}
}

// Over TLS the session is the __Host- cookie and only it: a cookie a
// plain-HTTP answer could have planted is not a session there.
func TestSessionCookieOverTLS(t *testing.T) {
	a, _, _ := setup(t)
	token, err := a.Mint(context.Background(), pipeline.User{Name: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cookie string
		tls          bool
		want         string
	}{
		{"OK/secure cookie over TLS", authn.SecureSessionCookie, true, "erin"},
		{"OK/plain cookie over HTTP", authn.SessionCookie, false, "erin"},
		{"ErrPlainCookieOverTLS", authn.SessionCookie, true, pipeline.AnonymousUser},
		{"ErrSecureCookieOverHTTP", authn.SecureSessionCookie, false, pipeline.AnonymousUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/kubelab/v1/whoami", nil)
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			r.AddCookie(&http.Cookie{Name: tc.cookie, Value: token})
			u, ok, err := a.AuthenticateRequest(r)
			if err != nil || !ok || u.Name != tc.want {
				t.Fatalf("%+v %v %v, want %s", u, ok, err, tc.want)
			}
			ck := authn.NewSessionCookie(r, token, time.Hour)
			if tc.tls != (ck.Secure && strings.HasPrefix(ck.Name, "__Host-") && ck.Path == "/" && ck.Domain == "") || !ck.HttpOnly {
				t.Fatalf("the cookie made for this request: %+v", ck)
			}
		})
	}
}
