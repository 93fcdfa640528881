package classroom_test

// How every test here starts a class and joins it: one class (a real
// kubelab process, as an instructor runs it) and one student (who signs
// in and downloads a kubeconfig, as a student does), so that each test
// reads as its attack and not as its set-up, and a change to the
// protocol is made once.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/internal/webclient"
)

// joinCode is every class's join code: no test is about its value.
const joinCode = "k8s-101"

// class is a kubelab process in classroom mode. A real process, not one
// in the test's own: the findings are about what a class's students and
// network reach (its ports, its flags, a restart), and the real kubectl
// reaches it as theirs would.
type class struct {
	*kubelabproc.Server
	httpsURL string // the --secure-listen listener, which the kubeconfigs name
}

// startClass runs a class with flags added to --classroom, the join code
// and a free HTTPS port, and waits until it is ready.
func startClass(t *testing.T, flags ...string) *class {
	t.Helper()
	c := newClass(t, flags...)
	c.start(t)
	return c
}

// newClass is startClass's class before it starts, for a test that sets
// its environment first.
func newClass(t *testing.T, flags ...string) *class {
	t.Helper()
	secure := kubelabproc.FreeAddr(t)
	// Every student of these tests signs in from this machine's one
	// address: only the test of that cap sets one (a later flag wins).
	p := kubelabproc.New(t, "class", append([]string{"--classroom", "--join-code", joinCode, "--secure-listen", secure, "--max-joins-per-address=0"}, flags...)...)
	return &class{Server: p, httpsURL: "https://" + secure}
}

// classBannerEnd is the banner's last line in classroom mode. The banner
// is printed before /readyz answers, but it reaches the test through the
// process's output pipe, which may still be copying it.
const classBannerEnd = "has the SHA-256 fingerprint"

// start runs the process (again, after a Stop) and waits for /readyz,
// which plain HTTP serves to anyone (load balancers probe it), and for the
// whole banner in the output. kubelabproc's Ready does not apply: it
// expects the admin kubeconfig to name the plain port, and a class's
// names the HTTPS one.
func (c *class) start(t *testing.T) {
	t.Helper()
	c.Start(t)
	deadline := time.Now().Add(kubelabproc.Wait)
	for {
		resp, err := http.Get(c.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(c.Output(), classBannerEnd) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubelab %s not ready after %s: %v\n%s", c.Name, kubelabproc.Wait, err, c.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// adminKubeconfig is the kubeconfig the class wrote for its instructor:
// cluster-admin, over HTTPS, with kubelab's CA.
func (c *class) adminKubeconfig() string { return filepath.Join(c.DataDir, "kubeconfig") }

// admin is a clientset with the instructor's kubeconfig, for what a test
// sets up or checks behind the students' backs.
func (c *class) admin(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.adminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
}

// browser is a browser that trusts kubelab's CA (as the README tells
// students to), keeps cookies, and does not follow redirects, so that a
// test sees each answer a browser would.
func (c *class) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Jar:           jar,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.roots(t)}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// roots trusts kubelab's CA, as the README tells students to.
func (c *class) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.adminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	for _, cl := range cfg.Clusters {
		roots.AppendCertsFromPEM(cl.CertificateAuthorityData)
	}
	return roots
}

// student is someone who joined a class: their browser's session, and
// once they downloaded one, the kubeconfig they give the real kubectl.
type student struct {
	name    string       // the name the class gave them, also their namespace
	base    string       // the kubelab they signed in to, e.g. http://127.0.0.1:port
	browser *http.Client // their browser: its jar holds the session cookie
	// signin is the sign-in's answer (its body read): its Set-Cookie has
	// the cookie's attributes, which a jar does not give back.
	signin *http.Response

	kubeconfig string       // the last kubeconfig they downloaded
	config     *rest.Config // the same, for raw requests with its token
	api        *http.Client // HTTPS to the API with that token, as kubectl's
}

// join is how a student starts: sign in to the class at base, then
// download a kubeconfig.
func join(t *testing.T, base, display string) *student {
	t.Helper()
	s := signIn(t, nil, base, display)
	s.downloadKubeconfig(t)
	return s
}

// signIn signs in as display, as a script does: POST /signin with the
// join code, asking for JSON, which answers 201 with the student (and
// sets the session cookie). browser is the student's browser; nil is a
// new one, keeping cookies.
func signIn(t *testing.T, browser *http.Client, base, display string) *student {
	t.Helper()
	if browser == nil {
		jar, _ := cookiejar.New(nil)
		browser = &http.Client{Jar: jar}
	}
	s := &student{base: base, browser: browser}
	form := url.Values{"name": {display}, "code": {joinCode}}.Encode()
	resp, body := webclient.Send(t, browser, "POST", base+"/signin", form,
		"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("sign in as %q: %d %s", display, resp.StatusCode, body)
	}
	var st struct{ Name string }
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Name == "" {
		t.Fatalf("sign in as %q: %v %s", display, err, body)
	}
	s.name, s.signin = st.Name, resp
	return s
}

// downloadKubeconfig downloads a kubeconfig with the session, as the
// account bar does (a POST: a GET mints nothing), and returns its path;
// the student's kubectl and API requests use it from then on.
func (s *student) downloadKubeconfig(t *testing.T) string {
	t.Helper()
	resp, kc := s.do(t, "POST", "/kubelab/v1/kubeconfig", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("kubeconfig of %s: %d %s", s.name, resp.StatusCode, kc)
	}
	raw, err := clientcmd.Load([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	if ns := raw.Contexts[raw.CurrentContext].Namespace; ns != s.name {
		t.Fatalf("the kubeconfig of %s names the namespace %q:\n%s", s.name, ns, kc)
	}
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.config, err = clientcmd.BuildConfigFromFlags("", s.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if s.api, err = rest.HTTPClientFor(s.config); err != nil {
		t.Fatal(err)
	}
	return s.kubeconfig
}

// kubectl runs the real kubectl with the student's kubeconfig.
func (s *student) kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return clitest.KubectlWith(t, s.kubeconfig, args...)
}

// do sends a request from the student's browser (their session cookie)
// to path on their kubelab; header pairs are set on it.
func (s *student) do(t *testing.T, method, path, body string, header ...string) (*http.Response, string) {
	t.Helper()
	return webclient.Send(t, s.browser, method, s.base+path, body, header...)
}

// apiDo sends a request to path on the API with the kubeconfig's token,
// over HTTPS, as kubectl does; header pairs are set on it.
func (s *student) apiDo(t *testing.T, method, path string, header ...string) (*http.Response, string) {
	t.Helper()
	return webclient.Send(t, s.api, method, s.config.Host+path, "", header...)
}

// cookie is the Cookie header of the student's browser on their kubelab,
// for clients that take no jar (websockets).
func (s *student) cookie() string {
	u, _ := url.Parse(s.base)
	var pairs []string
	for _, c := range s.browser.Jar.Cookies(u) {
		pairs = append(pairs, c.Name+"="+c.Value)
	}
	return strings.Join(pairs, "; ")
}
