// Package topology runs the topology docker-compose.yml describes, with
// processes instead of containers: a 3-member etcd cluster on loopback and
// kubelab server processes built from ./cmd/kubelab, pointed at it.
package topology

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// wait bounds every wait in these tests.
const wait = 30 * time.Second

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// kubelabBinary builds ./cmd/kubelab once per test binary.
func kubelabBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubelab-topology-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "kubelab")
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", binary, "./cmd/kubelab")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/kubelab: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// TestMain removes the binary kubelabBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// lockedBuffer collects a process's output from its two pipes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is one kubelab process. Its address and data dir stay the same
// across restarts, as a container's would.
type server struct {
	name      string
	addr      string
	dataDir   string
	endpoints []string

	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	logs   []string
	client *kubernetes.Clientset
}

func newServer(t *testing.T, name string, endpoints []string) *server {
	t.Helper()
	s := &server{name: name, addr: storagetest.FreeAddr(t), dataDir: t.TempDir(), endpoints: endpoints}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			for i, l := range append(s.logs, s.output()) {
				t.Logf("--- kubelab %s, run %d ---\n%s", s.name, i+1, l)
			}
		}
	})
	return s
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) output() string {
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// start runs the process; ready waits for it.
func (s *server) start(t *testing.T) {
	t.Helper()
	if s.out != nil {
		s.logs = append(s.logs, s.out.String())
	}
	s.out = &lockedBuffer{}
	s.cmd = exec.Command(kubelabBinary(t),
		"--listen", s.addr,
		"--data-dir", s.dataDir,
		"--etcd-endpoints", strings.Join(s.endpoints, ","),
		"--compaction-interval", "0",
		"--log-level", "warn",
		// These tests check every event in the watch streams against the
		// writes they made; the simulated node's writes would be noise.
		"--simulated-node=false",
	)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// Settings must come from the flags above, not the environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBELAB_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start kubelab %s: %v", s.name, err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		s.err = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
}

// ready waits until /readyz answers 200, then connects a client with the
// admin kubeconfig the server wrote.
func (s *server) ready(t *testing.T) error {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("kubelab %s exited while starting: %v", s.name, s.err)
		default:
		}
		resp, err := http.Get(s.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubelab %s not ready after %s (last: %v)", s.name, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "kubeconfig"))
	if err != nil {
		return fmt.Errorf("kubelab %s's kubeconfig: %v", s.name, err)
	}
	if cfg.Host != s.url() {
		return fmt.Errorf("kubelab %s's kubeconfig names %s, want %s", s.name, cfg.Host, s.url())
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.UserAgent = "topology-test/" + s.name
	if s.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	return nil
}

// stop sends SIGTERM, as docker stop does, and wants a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM kubelab %s: %v", s.name, err)
	}
	select {
	case <-s.exited:
		if s.err != nil {
			t.Errorf("kubelab %s exited after SIGTERM with %v", s.name, s.err)
		}
	case <-time.After(wait):
		s.kill()
		t.Fatalf("kubelab %s still running %s after SIGTERM", s.name, wait)
	}
}

func (s *server) kill() {
	if s.cmd == nil || s.exited == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// startServers starts the servers at once, as docker compose does, and waits
// until every one is ready.
func startServers(t *testing.T, servers ...*server) {
	t.Helper()
	for _, s := range servers {
		s.start(t)
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.ready(t) }()
	}
	var all []error
	for range servers {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		t.Fatal(err)
	}
}

// restartMembers starts the stopped members i... again on their data, at
// once, since a member waits for a quorum before it is ready.
func restartMembers(t *testing.T, c *storagetest.Cluster, idx ...int) {
	t.Helper()
	errs := make(chan error, len(idx))
	for _, i := range idx {
		go func() {
			cfg := c.Configs[i]
			cfg.StartTimeout = wait
			m, err := embedetcd.Start(cfg)
			if err == nil {
				c.Members[i] = m
			}
			errs <- err
		}()
	}
	var all []error
	for range idx {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		t.Fatalf("restart etcd members %v: %v", idx, err)
	}
}
