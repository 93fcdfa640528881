package classroom_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/internal/webclient"
	"github.com/kubelab/kubelab/pipeline/authn"
)

const (
	instructorTokenA = "instructor-token-aaaa-0123456789"
	instructorTokenB = "instructor-token-bbbb-9876543210"
)

// startTokensClass is a class with an etcd port for the instructor's
// etcdctl (mutual TLS, as a class's is) and instructorToken, its last
// flag, so that a restart can change it. Tests send traffic to loopback
// only, so a client "on the classroom network" is tested where the
// redirect is decided, in ./server
// (TestTransportPlainHTTPFromTheNetworkIsRedirected).
func startTokensClass(t *testing.T, instructorToken string) *class {
	t.Helper()
	return startClass(t, "--etcd-listen-client", kubelabproc.FreeAddr(t), "--instructor-token", instructorToken)
}

// fromPage sends a request from browser as a page of kubelab's own does:
// with its Origin and Sec-Fetch-Site (header pairs override them); form,
// if any, is the body.
func fromPage(t *testing.T, browser *http.Client, method, target string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	u, _ := url.Parse(target)
	header = append([]string{"Origin", u.Scheme + "://" + u.Host, "Sec-Fetch-Site", "same-origin"}, header...)
	var body string
	if form != nil {
		body = form.Encode()
		header = append([]string{"Content-Type", "application/x-www-form-urlencoded"}, header...)
	}
	return webclient.Send(t, browser, method, target, body, header...)
}

// joinOverHTTPS signs in over HTTPS in a browser trusting kubelab's CA,
// and checks the cookie the browser gets.
func joinOverHTTPS(t *testing.T, c *class, display string) *student {
	t.Helper()
	s := signIn(t, c.browser(t), c.httpsURL, display)
	checkSecureSessionCookie(t, s.signin)
	return s
}

// checkSecureSessionCookie: over HTTPS the session is a __Host- cookie,
// Secure and HttpOnly, for this host only.
func checkSecureSessionCookie(t *testing.T, resp *http.Response) {
	t.Helper()
	for _, ck := range resp.Cookies() {
		if ck.Name == authn.SessionCookie {
			t.Fatalf("the plain-HTTP cookie was set over HTTPS: %+v", ck)
		}
		if ck.Name == authn.SecureSessionCookie {
			if !ck.Secure || !ck.HttpOnly || ck.Path != "/" || ck.Domain != "" || ck.SameSite != http.SameSiteLaxMode {
				t.Fatalf("session cookie %+v: want Secure, HttpOnly, Path=/, no Domain, SameSite=Lax", ck)
			}
			return
		}
	}
	t.Fatalf("no %s cookie in %v", authn.SecureSessionCookie, resp.Header.Values("Set-Cookie"))
}

// tokenKeys counts the minted tokens in etcd, read with the real etcdctl
// and the flags the banner prints.
func tokenKeys(t *testing.T, c *class) int {
	t.Helper()
	out, stderr, err := clitest.Run(t, clitest.Etcdctl(t), append(etcdctlCommand(t, c.Output()), "get", "--prefix", authn.TokenPrefix, "--keys-only")...)
	if err != nil {
		t.Fatalf("etcdctl: %v %s", err, stderr)
	}
	return len(strings.Fields(out))
}

// Finding: sign-out revoked only the browser's cookie; the kubeconfigs
// downloaded with it kept working for 30 days. Now signing out ends them:
// the real kubectl gets 401 with each.
func TestTokensSignOutEndsDownloadedKubeconfigs(t *testing.T) {
	t.Parallel()
	c := startTokensClass(t, instructorTokenA)
	alice := joinOverHTTPS(t, c, "Alice")
	configs := []string{alice.downloadKubeconfig(t), alice.downloadKubeconfig(t)}
	bob := joinOverHTTPS(t, c, "Bob")
	bobs := bob.downloadKubeconfig(t)
	for _, cfg := range append(configs, bobs) {
		if _, stderr, err := clitest.KubectlWith(t, cfg, "get", "pods"); err != nil {
			t.Fatalf("kubectl with a fresh kubeconfig: %v %s", err, stderr)
		}
	}
	if resp, body := fromPage(t, alice.browser, "POST", c.httpsURL+"/signout", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", resp.StatusCode, body)
	}
	for i, cfg := range configs {
		_, stderr, err := clitest.KubectlWith(t, cfg, "get", "pods")
		if err == nil || !strings.Contains(stderr, "Unauthorized") {
			t.Errorf("kubeconfig %d after sign-out: %v %s, want 401 Unauthorized", i+1, err, stderr)
		}
	}
	if _, stderr, err := clitest.KubectlWith(t, bobs, "get", "pods"); err != nil {
		t.Errorf("Alice's sign-out ended Bob's kubeconfig: %v %s", err, stderr)
	}
	if resp, body := fromPage(t, alice.browser, "POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a kubeconfig after sign-out: %d %s", resp.StatusCode, body)
	}
}

// Finding: the kubeconfig was a GET, so an <img> or a link on any page a
// signed-in student opened minted a 30-day token with their cookie. Now a
// GET (cross-site or not) and a cross-site POST mint nothing; a student's
// own downloads are limited per user.
func TestTokensHostilePageMintsNothing(t *testing.T) {
	t.Parallel()
	c := startTokensClass(t, instructorTokenA)
	carol := joinOverHTTPS(t, c, "Carol").browser
	before := tokenKeys(t, c)
	const evil = "https://evil.example"
	resp, body := fromPage(t, carol, "GET", c.httpsURL+"/kubelab/v1/kubeconfig", nil,
		"Origin", "", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image")
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(body, `"kind":"Status"`) {
		t.Errorf("an <img> GET of the kubeconfig: %d %s, want a 405 Status", resp.StatusCode, body)
	}
	resp, body = fromPage(t, carol, "POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{}, "Origin", evil, "Sec-Fetch-Site", "cross-site")
	// The cookie is not taken from a cross-site POST: anonymous, refused.
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cross-site form POST of the kubeconfig: %d %s, want 401 or 403", resp.StatusCode, body)
	}
	if after := tokenKeys(t, c); after != before {
		t.Fatalf("a hostile page minted %d tokens", after-before)
	}

	for i := range authn.MintBurst {
		if resp, body := fromPage(t, carol, "POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{}); resp.StatusCode != http.StatusOK {
			t.Fatalf("download %d of a burst: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body = fromPage(t, carol, "POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("download %d at once: %d %s, want 429 with Retry-After", authn.MintBurst+1, resp.StatusCode, body)
	}
}

// Finding: the dashboard's browser session, minted from the instructor's
// token, outlived that token: after a restart with a new
// --instructor-token it still opened the dashboard for 12 hours. Now it
// ends with the token; the new token signs in.
func TestTokensNewInstructorTokenEndsOldDashboardSessions(t *testing.T) {
	t.Parallel()
	c := startTokensClass(t, instructorTokenA)
	teacher := c.browser(t)
	resp, body := fromPage(t, teacher, "POST", c.httpsURL+"/labs/dashboard/signin", url.Values{"token": {instructorTokenA}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dashboard sign-in: %d %s", resp.StatusCode, body)
	}
	checkSecureSessionCookie(t, resp)
	if resp, body := fromPage(t, teacher, "GET", c.httpsURL+"/kubelab/v1/labs/dashboard", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the dashboard with the session: %d %s", resp.StatusCode, body)
	}

	c.Stop(t)
	c.Args[len(c.Args)-1] = instructorTokenB
	c.start(t)
	if resp, body := fromPage(t, teacher, "GET", c.httpsURL+"/kubelab/v1/labs/dashboard", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old instructor token's session after the restart: %d %s, want 401", resp.StatusCode, body)
	}
	if resp, body := fromPage(t, teacher, "GET", c.httpsURL+"/labs/dashboard", nil, "Accept", "text/html"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) {
		t.Errorf("the dashboard page with the old session: %d, want the sign-in form", resp.StatusCode)
	}
	resp, body = fromPage(t, teacher, "POST", c.httpsURL+"/labs/dashboard/signin", url.Values{"token": {instructorTokenB}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dashboard sign-in with the new token: %d %s", resp.StatusCode, body)
	}
	if resp, body := fromPage(t, teacher, "GET", c.httpsURL+"/kubelab/v1/labs/dashboard", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the dashboard with the new session: %d %s", resp.StatusCode, body)
	}
}
