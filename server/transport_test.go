package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server"
)

// In classroom mode a plain-HTTP request from another machine is sent to
// the HTTPS listener before anything answers it: a sign-in gets no
// cookie, an API request is not served. The instructor's own machine
// (loopback) and the health endpoints keep plain HTTP. The requests go
// straight to the router with the client address set, since the tests'
// listeners are on loopback.
func TestTransportPlainHTTPFromTheNetworkIsRedirected(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	secure, err := url.Parse(lab.SecureURL())
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, target, remote, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Host = "lab.example:8080"
		req.RemoteAddr = remote
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		lab.Echo().ServeHTTP(rec, req)
		return rec
	}
	signin := url.Values{"name": {"Nina"}, "code": {joinCode}}.Encode()
	for _, tc := range []struct {
		name, method, target, remote, body string
		wantRedirect                       bool
	}{
		{"ErrSignInFromTheNetwork", "POST", "/signin?next=%2Flabs", "192.0.2.50:40000", signin, true},
		{"ErrPageFromTheNetwork", "GET", "/lesson/", "192.0.2.50:40000", "", true},
		{"ErrAPIFromTheNetwork", "GET", "/api/v1/namespaces", "[2001:db8::5]:40000", "", true},
		{"OKHealthFromTheNetwork", "GET", "/readyz", "192.0.2.50:40000", "", false},
		{"OKSignInFromLoopback", "POST", "/signin", "127.0.0.1:40000", signin, false},
		{"OKSignInFromIPv6Loopback", "POST", "/signin", "[::1]:40000", url.Values{"name": {"Nils"}, "code": {joinCode}}.Encode(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(tc.method, tc.target, tc.remote, tc.body)
			if !tc.wantRedirect {
				if rec.Code == http.StatusTemporaryRedirect {
					t.Fatalf("%s from %s was redirected", tc.target, tc.remote)
				}
				return
			}
			want := "https://lab.example:" + secure.Port() + tc.target
			if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != want {
				t.Fatalf("%d to %q, want 307 to %q", rec.Code, rec.Header().Get("Location"), want)
			}
			if c := rec.Header().Values("Set-Cookie"); len(c) > 0 {
				t.Fatalf("a plain-HTTP answer to the network set cookies: %v", c)
			}
		})
	}
	// The loopback sign-in did set the plain-HTTP session cookie.
	rec := serve("POST", "/signin", "127.0.0.1:40001", url.Values{"name": {"Lou"}, "code": {joinCode}}.Encode())
	if c := rec.Header().Get("Set-Cookie"); !strings.HasPrefix(c, authn.SessionCookie+"=") {
		t.Fatalf("sign-in from loopback: %d, cookie %q", rec.Code, c)
	}
}

// When Docker or a proxy publishes the HTTPS listener on another port
// (26443:6443), everything that sends a student there names the published
// port: the redirect from plain HTTP, a kubeconfig downloaded over HTTPS,
// and the admin kubeconfig.
func TestTransportPublishedSecurePort(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t, func(c *server.Config) { c.PublishedSecurePort = 26443 })
	req := httptest.NewRequest("GET", "/lesson/", nil)
	req.Host = "lab.example:8080"
	req.RemoteAddr = "192.0.2.50:40000"
	rec := httptest.NewRecorder()
	lab.Echo().ServeHTTP(rec, req)
	if got := rec.Header().Get("Location"); rec.Code != http.StatusTemporaryRedirect || got != "https://lab.example:26443/lesson/" {
		t.Fatalf("plain HTTP: %d to %q, want 307 to the published port", rec.Code, got)
	}
	if !strings.HasSuffix(lab.SecureURL(), ":26443") {
		t.Fatalf("the secure URL (the admin kubeconfig's server) is %s, want the published port", lab.SecureURL())
	}
	admin, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range admin.Clusters {
		if !strings.HasSuffix(c.Server, ":26443") {
			t.Fatalf("the admin kubeconfig names %s, want the published port", c.Server)
		}
	}
	s := join(t, lab, "Pia")
	raw, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Clusters {
		if !strings.HasSuffix(c.Server, ":26443") {
			t.Fatalf("a student's kubeconfig names %s, want the published port", c.Server)
		}
	}
}
