package differential

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// server is one API server under test: kubelab, or the reference
// kube-apiserver. Both are real processes over a real etcd.
type server interface {
	Name() string
	// Restart stops the API server (not etcd) and starts it again with
	// flags, by kube-apiserver's names (--watch-cache=false); kubelab's
	// names for them are in kubelabFlags.
	Restart(t *testing.T, flags ...string)
	// Etcd is the endpoint etcdctl reaches the server's etcd at.
	Etcd() string
	Client(t *testing.T) *client
	Stop()
}

// kubelabServer runs bin/kubelab on a data directory it keeps across
// restarts, over an etcd of its own started as the reference's is (the
// same etcd binary and flags): kube's bookmarks carry what its cache has
// processed, etcd's progress notifications included, so the two API
// servers are compared over the same etcd, not over kubelab's embedded
// member and its 5 s progress interval against the reference's default.
type kubelabServer struct {
	bin, dir   string
	port, etcd int
	cmd        *exec.Cmd
}

func startKubelab(t *testing.T, bin, refBin string) *kubelabServer {
	k := &kubelabServer{bin: bin, dir: t.TempDir(), port: freePort(t), etcd: freePort(t)}
	k.startEtcd(t, refBin)
	k.start(t)
	return k
}

// startEtcd runs the reference's etcd with cluster.sh's flags on free
// ports; the test's cleanup stops it.
func (k *kubelabServer) startEtcd(t *testing.T, refBin string) {
	t.Helper()
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(filepath.Join(refBin, "etcd"), "--data-dir", filepath.Join(k.dir, "etcd"),
		"--listen-client-urls", k.Etcd(), "--advertise-client-urls", k.Etcd(),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer)
	log, err := os.Create(filepath.Join(k.dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	waitReady(t, k.Etcd()+"/health", http.DefaultClient)
}

func (k *kubelabServer) Name() string { return "kubelab" }
func (k *kubelabServer) Etcd() string { return fmt.Sprintf("http://127.0.0.1:%d", k.etcd) }

func (k *kubelabServer) start(t *testing.T, flags ...string) {
	t.Helper()
	args := append([]string{"--listen", fmt.Sprintf("127.0.0.1:%d", k.port), "--data-dir", k.dir,
		"--etcd-endpoints", k.Etcd(), "--log-level", "warn"}, flags...)
	k.cmd = exec.Command(k.bin, args...)
	log, err := os.OpenFile(filepath.Join(k.dir, "kubelab.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	k.cmd.Stdout, k.cmd.Stderr = log, log
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, fmt.Sprintf("http://127.0.0.1:%d/readyz", k.port), http.DefaultClient)
}

func (k *kubelabServer) Restart(t *testing.T, flags ...string) {
	t.Helper()
	k.Stop()
	for i, f := range flags {
		name, value, _ := strings.Cut(f, "=")
		if ours, ok := kubelabFlags[name]; ok {
			flags[i] = ours + "=" + value
		}
	}
	k.start(t, flags...)
}

// kubelabFlags are kubelab's names for kube-apiserver's flags where they differ.
var kubelabFlags = map[string]string{"--etcd-compaction-interval": "--compaction-interval"}

func (k *kubelabServer) Stop() {
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	_ = k.cmd.Wait()
	k.cmd = nil
}

func (k *kubelabServer) Client(t *testing.T) *client {
	return newClient(t, filepath.Join(k.dir, "kubeconfig"))
}

// kubeServer is the reference control plane, driven by its cluster.sh
// (KUBE_REFERENCE), whose state directory is refDir.
type kubeServer struct{ script, refBin, refDir string }

func (k *kubeServer) Name() string { return "kube-apiserver" }
func (k *kubeServer) Etcd() string { return "http://127.0.0.1:23790" }
func (k *kubeServer) Stop()        {}

func (k *kubeServer) Restart(t *testing.T, flags ...string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{k.script, "restart-apiserver"}, flags...)...)
	cmd.Env = append(os.Environ(), "REF_DIR="+k.refDir, "REF_BIN="+k.refBin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restarting kube-apiserver: %v\n%s", err, out)
	}
}

func (k *kubeServer) Client(t *testing.T) *client {
	return newClient(t, filepath.Join(k.refDir, "kubeconfig"))
}

// client makes raw requests, as kubectl get --raw does.
type client struct {
	cfg  *rest.Config
	http *http.Client
	// etcd is the client URL of the server's etcd, for etcdctl.
	etcd string
}

func newClient(t *testing.T, kubeconfig string) *client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &client{cfg: cfg, http: hc}
}

func (c *client) do(ctx context.Context, method, path, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.cfg.Host, "/")+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return c.http.Do(req)
}

func waitReady(t *testing.T, url string, hc *http.Client) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := hc.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready within 60s", url)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// etcdctl runs the reference's etcdctl against a server's etcd.
func etcdctl(t *testing.T, s server, args ...string) string {
	t.Helper()
	out, err := exec.Command(os.Getenv("ETCDCTL"), append([]string{"--endpoints", s.Etcd()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
	}
	return string(out)
}
