package classroom_test

// The embedded etcd and local mode, attacked: a web page that tries the
// etcd port (fetch, DNS rebinding), a class's network that looks for an
// etcd port, and whoever reached etcd writing a token entry by hand.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabproc"
)

// TestWebPageCannotUseEtcdPort: a page from another origin in Chromium
// tries etcd's JSON gateway on the local etcd port: a no-cors POST that
// needs no preflight and once wrote a token entry, and reads that CORS
// would have let it see. Nothing is written and nothing read.
func TestWebPageCannotUseEtcdPort(t *testing.T) {
	t.Parallel()
	etcdAddr := kubelabproc.FreeAddr(t)
	lab := kubelabproc.New(t, "local", "--etcd-listen-client", etcdAddr)
	kubelabproc.StartAll(t, lab)

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>a page</title><p>nothing to see</p>")
	}))
	defer attacker.Close()
	ctx := browsertest.Start(t)
	browsertest.Do(t, ctx, "open the attacker's page", chromedp.Navigate(attacker.URL))

	// A token entry of group system:masters with no expiry, as the attack
	// wrote it before the gateway was turned off.
	script := `(async () => {
		const etcd = "http://` + etcdAddr + `", out = [];
		const entry = btoa(JSON.stringify({user: "web-page", groups: ["system:masters"], created: new Date().toISOString()}));
		try {
			await fetch(etcd + "/v3/kv/put", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
				body: JSON.stringify({key: btoa("/kubelab/tokens/from-a-web-page"), value: entry})});
			out.push("put: sent");
		} catch (e) { out.push("put: " + e); }
		for (const [what, path, body] of [["range", "/v3/kv/range", JSON.stringify({key: btoa("/kubelab/"), range_end: btoa("/kubelab0")})], ["version", "/version", null]]) {
			try {
				const r = await fetch(etcd + path, body ? {method: "POST", body} : {});
				out.push(what + ": READ " + r.status + " " + (await r.text()).slice(0, 200));
			} catch (e) { out.push(what + ": refused"); }
		}
		return out.join("\n");
	})()`
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page saw:\n%s", got)
	if strings.Contains(got, "READ") {
		t.Errorf("the page read etcd's answers:\n%s", got)
	}
	out, stderr, err := clitest.Run(t, clitest.Etcdctl(t), "--endpoints", "http://"+etcdAddr, "get", "--prefix", "/kubelab/tokens/from-a-web-page")
	if err != nil {
		t.Fatalf("etcdctl: %v\n%s", err, stderr)
	}
	if strings.TrimSpace(out) != "" {
		t.Errorf("the page wrote a token entry:\n%s", out)
	}
}

// rawGet sends GET path to addr with the Host header a browser sends after
// DNS rebinding made host resolve to loopback.
func rawGet(t *testing.T, addr, path, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDNSRebindingIsMisdirected: a page at attacker.example whose name now
// resolves to 127.0.0.1 is same-origin with whatever listens there; its
// requests carry its own name in Host, and both the etcd port and local
// mode's API (where no token is cluster-admin) answer them 421.
func TestDNSRebindingIsMisdirected(t *testing.T) {
	t.Parallel()
	etcdAddr := kubelabproc.FreeAddr(t)
	lab := kubelabproc.New(t, "local", "--etcd-listen-client", etcdAddr)
	kubelabproc.StartAll(t, lab)
	for name, addr := range map[string]string{"etcd": etcdAddr, "kubelab": lab.Addr} {
		_, port, _ := net.SplitHostPort(addr)
		for _, path := range []string{"/version", "/api/v1/secrets"} {
			if code := rawGet(t, addr, path, "attacker.example:"+port); code != http.StatusMisdirectedRequest {
				t.Errorf("%s %s with Host attacker.example:%s: %d, want 421", name, path, port, code)
			}
		}
		if code := rawGet(t, addr, "/version", "localhost:"+port); code != http.StatusOK {
			t.Errorf("%s /version with Host localhost:%s: %d, want 200", name, port, code)
		}
	}
}

// TestClassHasNoEtcdPort: by default a class's kubelab serves etcd to no
// one: no port the process listens on answers an etcd client.
func TestClassHasNoEtcdPort(t *testing.T) {
	t.Parallel()
	s := startClass(t)
	if !strings.Contains(s.Output(), "embedded etcd: no client port") {
		t.Errorf("the banner does not say etcd has no client port:\n%s", s.Output())
	}
	ports := listeningPorts(t, s.Pid())
	if len(ports) == 0 {
		t.Fatal("found no listening port of the process: the check would prove nothing")
	}
	for _, port := range ports {
		if answersEtcd("127.0.0.1:" + port) {
			t.Errorf("port %s of the class's kubelab answers an etcd client", port)
		}
	}
}

func answersEtcd(addr string) bool {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = c.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	return err == nil
}

// listeningPorts are the TCP ports pid listens on: its sockets' inodes,
// found in the kernel's tables in state LISTEN (0A).
func listeningPorts(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []string
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			var port int
			fmt.Sscanf(f[1][strings.LastIndex(f[1], ":")+1:], "%X", &port)
			ports = append(ports, fmt.Sprint(port))
		}
	}
	return ports
}

// etcdctlCommand is the etcdctl command the banner prints, as arguments.
func etcdctlCommand(t *testing.T, output string) []string {
	t.Helper()
	m := regexp.MustCompile(`embedded etcd: \S+ \(etcdctl (.*) get --prefix /registry/ --keys-only\)`).FindStringSubmatch(output)
	if m == nil {
		t.Fatalf("the banner prints no etcdctl command:\n%s", output)
	}
	return strings.Fields(m[1])
}

// TestClassEtcdPortWantsCertificates: an etcd port asked for in a class
// serves TLS only, to clients with a certificate from kubelab's etcd CA:
// plain HTTP and TLS without a certificate get nothing, the instructor's
// etcdctl with the banner's flags works, and the files are the owner's.
func TestClassEtcdPortWantsCertificates(t *testing.T) {
	t.Parallel()
	etcdAddr := kubelabproc.FreeAddr(t)
	s := startClass(t, "--etcd-listen-client", etcdAddr)
	etcdctl := clitest.Etcdctl(t)
	flags := etcdctlCommand(t, s.Output())
	pki := filepath.Join(s.DataDir, "etcd-pki")
	for what, args := range map[string][]string{
		"plain HTTP":          {"--endpoints", "http://" + etcdAddr},
		"TLS, no certificate": {"--endpoints", "https://" + etcdAddr, "--cacert", filepath.Join(pki, "ca.crt")},
	} {
		args = append(args, "--dial-timeout=2s", "--command-timeout=3s", "get", "--prefix", "/kubelab/", "--keys-only")
		if out, _, err := clitest.Run(t, etcdctl, args...); err == nil {
			t.Errorf("etcdctl with %s read etcd:\n%s", what, out)
		}
	}
	out, stderr, err := clitest.Run(t, etcdctl, append(flags, "get", "--prefix", "/registry/namespaces/", "--keys-only")...)
	if err != nil || !strings.Contains(out, "/registry/namespaces/default") {
		t.Fatalf("etcdctl %s: %v\n%s%s", strings.Join(flags, " "), err, out, stderr)
	}
	if fi, err := os.Stat(pki); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, want a directory only its owner can open", pki, err)
	}
	entries, _ := os.ReadDir(pki)
	for _, e := range entries {
		if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
}

// TestHandWrittenTokenEntriesAuthenticateNothing: whoever reached etcd
// writes token entries by hand, one of group system:masters without an
// expiry and one that is not JSON; kubectl with either token is refused.
func TestHandWrittenTokenEntriesAuthenticateNothing(t *testing.T) {
	t.Parallel()
	s := startClass(t, "--etcd-listen-client", kubelabproc.FreeAddr(t))
	etcdctl := clitest.Etcdctl(t)
	flags := etcdctlCommand(t, s.Output())
	kubeconfig := s.adminKubeconfig()
	for token, entry := range map[string]string{
		"no-expiry-0123456789abcdef": `{"user":"mallory","groups":["system:masters"],"created":"2026-01-01T00:00:00Z"}`,
		"corrupt-0123456789abcdef":   `{"user":"mallory","groups":["system:masters"],`,
	} {
		key := "/kubelab/tokens/" + sha256Hex(token)
		if _, stderr, err := clitest.Run(t, etcdctl, append(flags, "put", key, entry)...); err != nil {
			t.Fatalf("etcdctl put: %v\n%s", err, stderr)
		}
		out, stderr, err := clitest.KubectlWith(t, kubeconfig, "--token", token, "get", "secrets", "-A")
		if err == nil || !strings.Contains(stderr, "You must be logged in") {
			t.Errorf("kubectl with the hand-written token %s: %v\n%s%s\nwant 401 (You must be logged in)", token, err, out, stderr)
		}
	}
	if _, stderr, err := clitest.KubectlWith(t, kubeconfig, "get", "secrets", "-A"); err != nil {
		t.Fatalf("kubectl with the admin kubeconfig: %v\n%s", err, stderr)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
