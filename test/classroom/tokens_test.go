package classroom_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/pipeline/authn"
)

const (
	tokensJoinCode   = "k8s-101"
	instructorTokenA = "instructor-token-aaaa-0123456789"
	instructorTokenB = "instructor-token-bbbb-9876543210"
)

// class is a kubelab process in classroom mode on loopback, with an
// etcd port for the instructor's etcdctl (mutual TLS, as a class's is).
// Tests send traffic to loopback only, so a client "on the classroom
// network" is tested where the redirect is decided, in ./server
// (TestTransportPlainHTTPFromTheNetworkIsRedirected).
type class struct {
	proc      *kubelabproc.Server
	plainURL  string   // http://host:port
	httpsURL  string   // https://host:port, the --secure-listen listener
	etcdFlags []string // etcdctl's flags for the class's etcd, as the banner prints them
	caPool    *x509.CertPool
}

func startTokensClass(t *testing.T, instructorToken string) *class {
	t.Helper()
	secure := kubelabproc.FreeAddr(t)
	p := kubelabproc.New(t, "tokens", "--classroom", "--join-code", tokensJoinCode,
		"--secure-listen", secure, "--etcd-listen-client", kubelabproc.FreeAddr(t), "--instructor-token", instructorToken)
	c := &class{proc: p, plainURL: "http://" + p.Addr, httpsURL: "https://" + secure}
	c.start(t)
	c.etcdFlags = etcdctlCommand(t, p.Output())
	return c
}

// start runs the process and waits for /readyz, which is served over
// plain HTTP to anyone (load balancers probe it); the admin kubeconfig
// names the HTTPS listener and carries the CA.
func (c *class) start(t *testing.T) {
	t.Helper()
	c.proc.Start(t)
	deadline := time.Now().Add(kubelabproc.Wait)
	for {
		resp, err := http.Get(c.plainURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubelab not ready after %s: %v\n%s", kubelabproc.Wait, err, c.proc.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cfg, err := clientcmd.LoadFromFile(filepath.Join(c.proc.DataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c.caPool = x509.NewCertPool()
	for _, cl := range cfg.Clusters {
		c.caPool.AppendCertsFromPEM(cl.CertificateAuthorityData)
	}
}

// browser is a student's browser: it trusts kubelab's CA (as the README
// tells students to), keeps cookies, and sends the fetch metadata of a
// page of kubelab's own on every request, unless a test sets other headers.
type browser struct {
	t      *testing.T
	class  *class
	client *http.Client
}

func (c *class) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, class: c, client: &http.Client{
		Jar:           jar,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.caPool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends a request; form, if any, is the body; header pairs override the
// same-origin fetch metadata.
func (b *browser) do(method, target string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	u, _ := url.Parse(target)
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// join signs in over HTTPS and checks the cookie the browser gets.
func (b *browser) join(name string) {
	b.t.Helper()
	resp, body := b.do("POST", b.class.httpsURL+"/signin", url.Values{"name": {name}, "code": {tokensJoinCode}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("join over HTTPS: %d %s", resp.StatusCode, body)
	}
	checkSecureSessionCookie(b.t, resp)
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

// kubeconfig downloads a kubeconfig as the account bar's form does.
func (b *browser) kubeconfig() string {
	b.t.Helper()
	resp, body := b.do("POST", b.class.httpsURL+"/kubelab/v1/kubeconfig", url.Values{})
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("kubeconfig download: %d %s", resp.StatusCode, body)
	}
	path := filepath.Join(b.t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// tokenKeys counts the minted tokens in etcd, read with the real etcdctl.
func (c *class) tokenKeys(t *testing.T) int {
	t.Helper()
	out, stderr, err := clitest.Run(t, clitest.Etcdctl(t), append(c.etcdFlags, "get", "--prefix", authn.TokenPrefix, "--keys-only")...)
	if err != nil {
		t.Fatalf("etcdctl: %v %s", err, stderr)
	}
	return len(strings.Fields(out))
}

// Finding: sign-out revoked only the browser's cookie; the kubeconfigs
// downloaded with it kept working for 30 days. Now signing out ends them:
// the real kubectl gets 401 with each.
func TestTokensSignOutEndsDownloadedKubeconfigs(t *testing.T) {
	c := startTokensClass(t, instructorTokenA)
	alice := c.browser(t)
	alice.join("Alice")
	configs := []string{alice.kubeconfig(), alice.kubeconfig()}
	bob := c.browser(t)
	bob.join("Bob")
	bobs := bob.kubeconfig()
	for _, cfg := range append(configs, bobs) {
		if _, stderr, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", cfg, "get", "pods"); err != nil {
			t.Fatalf("kubectl with a fresh kubeconfig: %v %s", err, stderr)
		}
	}
	if resp, body := alice.do("POST", c.httpsURL+"/signout", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", resp.StatusCode, body)
	}
	for i, cfg := range configs {
		_, stderr, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", cfg, "get", "pods")
		if err == nil || !strings.Contains(stderr, "Unauthorized") {
			t.Errorf("kubeconfig %d after sign-out: %v %s, want 401 Unauthorized", i+1, err, stderr)
		}
	}
	if _, stderr, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", bobs, "get", "pods"); err != nil {
		t.Errorf("Alice's sign-out ended Bob's kubeconfig: %v %s", err, stderr)
	}
	if resp, body := alice.do("POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a kubeconfig after sign-out: %d %s", resp.StatusCode, body)
	}
}

// Finding: the kubeconfig was a GET, so an <img> or a link on any page a
// signed-in student opened minted a 30-day token with their cookie. Now a
// GET (cross-site or not) and a cross-site POST mint nothing; a student's
// own downloads are limited per user.
func TestTokensHostilePageMintsNothing(t *testing.T) {
	c := startTokensClass(t, instructorTokenA)
	carol := c.browser(t)
	carol.join("Carol")
	before := c.tokenKeys(t)
	const evil = "https://evil.example"
	resp, body := carol.do("GET", c.httpsURL+"/kubelab/v1/kubeconfig", nil,
		"Origin", "", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image")
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(body, `"kind":"Status"`) {
		t.Errorf("an <img> GET of the kubeconfig: %d %s, want a 405 Status", resp.StatusCode, body)
	}
	resp, body = carol.do("POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{}, "Origin", evil, "Sec-Fetch-Site", "cross-site")
	// The cookie is not taken from a cross-site POST: anonymous, refused.
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cross-site form POST of the kubeconfig: %d %s, want 401 or 403", resp.StatusCode, body)
	}
	if after := c.tokenKeys(t); after != before {
		t.Fatalf("a hostile page minted %d tokens", after-before)
	}

	for i := range authn.MintBurst {
		if resp, body := carol.do("POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{}); resp.StatusCode != http.StatusOK {
			t.Fatalf("download %d of a burst: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body = carol.do("POST", c.httpsURL+"/kubelab/v1/kubeconfig", url.Values{})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("download %d at once: %d %s, want 429 with Retry-After", authn.MintBurst+1, resp.StatusCode, body)
	}
}

// Finding: the dashboard's browser session, minted from the instructor's
// token, outlived that token: after a restart with a new
// --instructor-token it still opened the dashboard for 12 hours. Now it
// ends with the token; the new token signs in.
func TestTokensNewInstructorTokenEndsOldDashboardSessions(t *testing.T) {
	c := startTokensClass(t, instructorTokenA)
	teacher := c.browser(t)
	resp, body := teacher.do("POST", c.httpsURL+"/labs/dashboard/signin", url.Values{"token": {instructorTokenA}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dashboard sign-in: %d %s", resp.StatusCode, body)
	}
	checkSecureSessionCookie(t, resp)
	if resp, body := teacher.do("GET", c.httpsURL+"/kubelab/v1/labs/dashboard", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the dashboard with the session: %d %s", resp.StatusCode, body)
	}

	c.proc.Stop(t)
	c.proc.Args[len(c.proc.Args)-1] = instructorTokenB
	c.start(t)
	if resp, body := teacher.do("GET", c.httpsURL+"/kubelab/v1/labs/dashboard", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old instructor token's session after the restart: %d %s, want 401", resp.StatusCode, body)
	}
	if resp, body := teacher.do("GET", c.httpsURL+"/labs/dashboard", nil, "Accept", "text/html"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) {
		t.Errorf("the dashboard page with the old session: %d, want the sign-in form", resp.StatusCode)
	}
	resp, body = teacher.do("POST", c.httpsURL+"/labs/dashboard/signin", url.Values{"token": {instructorTokenB}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dashboard sign-in with the new token: %d %s", resp.StatusCode, body)
	}
	if resp, body := teacher.do("GET", c.httpsURL+"/kubelab/v1/labs/dashboard", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the dashboard with the new session: %d %s", resp.StatusCode, body)
	}
}
