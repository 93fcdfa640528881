package embedetcd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func startMember(t *testing.T, clientURL string, tlsFiles *embedetcd.ClientTLS) *embedetcd.Member {
	t.Helper()
	m, err := embedetcd.Start(embedetcd.Config{
		DataDir: t.TempDir(), ClientURL: clientURL, ClientTLS: tlsFiles,
		UnsafeNoFsync: true, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

// TestClientPortRefusesWebPages: what a page in a browser can send to the
// member's plain-HTTP port (a fetch, a form, a preflight, a request after
// DNS rebinding) neither writes nor reads anything.
func TestClientPortRefusesWebPages(t *testing.T) {
	// A real port, not 0: etcd's JSON gateway dials the configured address.
	m := startMember(t, "http://"+storagetest.FreeAddr(t), nil)
	base := m.ClientURL()
	do := func(method, path, host, origin, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	put := `{"key":"L2t1YmVsYWIvdG9rZW5zL3g=","value":"eA=="}` // /kubelab/tokens/x
	port := strings.TrimPrefix(base, "http://127.0.0.1")

	t.Run("gateway is off", func(t *testing.T) {
		if resp := do("POST", "/v3/kv/put", "", "http://evil.example", put); resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST /v3/kv/put: %s, want 404 (no JSON gateway)", resp.Status)
		}
	})
	t.Run("no CORS for any origin", func(t *testing.T) {
		for _, origin := range []string{"http://evil.example", "null", "http://127.0.0.1:8080", "http://localhost" + port} {
			for _, method := range []string{"OPTIONS", "GET"} {
				resp := do(method, "/version", "", origin, "")
				if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
					t.Errorf("%s /version from %s: Access-Control-Allow-Origin %q, want none", method, origin, got)
				}
			}
		}
	})
	t.Run("DNS rebinding", func(t *testing.T) {
		for _, host := range []string{"attacker.example" + port, "attacker.example", "192.168.1.5" + port, "localhost.attacker.example" + port} {
			if resp := do("GET", "/version", host, "", ""); resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("Host %s: %s, want 421", host, resp.Status)
			}
		}
		for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "[::1]" + port} {
			if resp := do("GET", "/version", host, "", ""); resp.StatusCode != http.StatusOK {
				t.Errorf("Host %s: %s, want 200", host, resp.Status)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := m.Client().Get(ctx, "/kubelab/tokens/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("the page's requests wrote %d keys", len(resp.Kvs))
	}
}

// TestTLSClientListener: with ClientTLS the member answers only clients
// that present a certificate from its CA; kubelab's own client has one.
func TestTLSClientListener(t *testing.T) {
	files, err := embedetcd.WritePKI(filepath.Join(t.TempDir(), "etcd-pki"), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	m := startMember(t, "http://127.0.0.1:0", &files)
	if !strings.HasPrefix(m.ClientURL(), "https://127.0.0.1:") {
		t.Fatalf("ClientURL = %q, want https on loopback", m.ClientURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.Client().Put(ctx, "/registry/x", "y"); err != nil {
		t.Fatalf("kubelab's own client: %v", err)
	}
	caPEM, _ := os.ReadFile(files.CAFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp, err := noCert.Get(m.ClientURL() + "/version"); err == nil {
		resp.Body.Close()
		t.Errorf("a client without a certificate got %s, want the handshake refused", resp.Status)
	}
	u, _ := url.Parse(m.ClientURL())
	if resp, err := http.Get("http://" + u.Host + "/version"); err == nil {
		resp.Body.Close()
		t.Errorf("plain HTTP got %s, want nothing", resp.Status)
	}
	noCertEtcd, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL()}, TLS: &tls.Config{RootCAs: pool}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer noCertEtcd.Close()
	gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
	defer gcancel()
	if _, err := noCertEtcd.Get(gctx, "/registry/x"); err == nil {
		t.Error("an etcd client without a certificate read a key")
	}
}

func TestWritePKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd-pki")
	first, err := embedetcd.WritePKI(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 6 {
		t.Fatalf("%d files, want 6 (CA, server and admin, each a certificate and a key)", len(entries))
	}
	read := func() map[string]string {
		m := map[string]string{}
		for _, e := range entries {
			fi, _ := e.Info()
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
			}
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			m[e.Name()] = string(b)
		}
		return m
	}
	before := read()
	if _, err := embedetcd.WritePKI(dir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	for name, data := range read() {
		if data != before[name] {
			t.Errorf("%s was made again on restart; etcdctl's flags would stop working", name)
		}
	}
	if _, err := embedetcd.WritePKI(dir, "10.1.2.3"); err != nil {
		t.Fatal(err)
	}
	after := read()
	for name, data := range after {
		if changed := data != before[name]; changed != strings.HasPrefix(name, "server.") {
			t.Errorf("%s changed=%v after the listen host changed; want only the serving certificate made again", name, changed)
		}
	}
	pair, err := tls.LoadX509KeyPair(first.CertFile, first.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Leaf.VerifyHostname("10.1.2.3"); err != nil {
		t.Errorf("serving certificate for the new host: %v", err)
	}
	if err := pair.Leaf.VerifyHostname("localhost"); err != nil {
		t.Errorf("serving certificate for localhost: %v", err)
	}
}
