// Package kubelabproc runs kubelab as a real process for tests: the binary
// built from ./cmd/kubelab, on free loopback ports and a data dir that stays
// the same across restarts, stopped with SIGTERM or killed with SIGKILL. The
// fault tests need a process to kill; an in-process server cannot be.
package kubelabproc

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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/freeport"
)

// Wait bounds every wait for a process: to start, to become ready, to stop.
const Wait = 30 * time.Second

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// BinaryEnv names a kubelab binary already built from this tree, for a run
// of several suites (.ci/run sets it): each suite linking its own copy of a
// binary this size costs more than most of their tests.
const BinaryEnv = "KUBELAB_BINARY"

// Binary is the kubelab binary BinaryEnv names, or else ./cmd/kubelab
// built once per test binary; the test binary's TestMain calls
// RemoveBinary when the tests are done.
func Binary(t testing.TB) string {
	t.Helper()
	if given := os.Getenv(BinaryEnv); given != "" {
		if info, err := os.Stat(given); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			t.Fatalf("%s=%s is not an executable kubelab binary: %v", BinaryEnv, given, err)
		}
		return given
	}
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kubelab-proc-")
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
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/kubelab: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// RemoveBinary removes what Binary built.
func RemoveBinary() {
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
}

// moduleRoot is the directory of the go.mod above the working directory:
// tests run in their package's directory, wherever it sits in the tree.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// FreeAddr is a loopback host:port nothing listens on now, outside the
// range outgoing connections take their ports from.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return addr
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

// Server is one kubelab process. Its address and data dir stay the same
// across restarts, as a container's would.
type Server struct {
	Name    string
	Addr    string
	DataDir string
	// Args are the flags after --listen and --data-dir, e.g.
	// --etcd-endpoints or --etcd-listen-client.
	Args []string
	// Env is added to the process's environment, e.g. TMPDIR to watch
	// what it leaves on the disk.
	Env []string

	// Config and Client reach the server with the admin kubeconfig it
	// wrote; Ready sets them.
	Config *rest.Config
	Client *kubernetes.Clientset

	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	logs   []string
}

// New describes a server on a free address and a fresh data dir; Start runs
// it. Cleanup kills it, and logs its output if the test failed.
func New(t testing.TB, name string, args ...string) *Server {
	t.Helper()
	s := &Server{Name: name, Addr: FreeAddr(t), DataDir: t.TempDir(), Args: args}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			for i, l := range append(s.logs, s.Output()) {
				t.Logf("--- kubelab %s, run %d ---\n%s", s.Name, i+1, l)
			}
		}
	})
	return s
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.Addr }

// Output is what the current run has written to stdout and stderr.
func (s *Server) Output() string {
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// Pid is the current run's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Start runs the process; Ready waits for it.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.out != nil {
		s.logs = append(s.logs, s.out.String())
	}
	s.out = &lockedBuffer{}
	args := append([]string{"--listen", s.Addr, "--data-dir", s.DataDir,
		"--compaction-interval", "0",
		"--log-level", "warn",
		// The tests check every event in the watch streams against the
		// writes they made; the simulated node's writes would be noise.
		"--simulated-node=false",
	}, s.Args...)
	s.cmd = exec.Command(Binary(t), args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// Settings must come from the flags above, not the environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBELAB_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Env = append(s.cmd.Env, s.Env...)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start kubelab %s: %v", s.Name, err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		s.err = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
}

// Ready waits until /readyz answers 200, then connects a client with the
// admin kubeconfig the server wrote.
func (s *Server) Ready(t testing.TB) error {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("kubelab %s exited while starting: %v", s.Name, s.err)
		default:
		}
		resp, err := http.Get(s.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubelab %s not ready after %s (last: %v)", s.Name, Wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.DataDir, "kubeconfig"))
	if err != nil {
		return fmt.Errorf("kubelab %s's kubeconfig: %v", s.Name, err)
	}
	if cfg.Host != s.URL() {
		return fmt.Errorf("kubelab %s's kubeconfig names %s, want %s", s.Name, cfg.Host, s.URL())
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.UserAgent = "kubelabproc/" + s.Name
	if s.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	s.Config = cfg
	return nil
}

// Stop sends SIGTERM, as docker stop does, and wants a clean exit.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM kubelab %s: %v", s.Name, err)
	}
	select {
	case <-s.exited:
		if s.err != nil {
			t.Errorf("kubelab %s exited after SIGTERM with %v", s.Name, s.err)
		}
	case <-time.After(Wait):
		s.Kill()
		t.Fatalf("kubelab %s still running %s after SIGTERM", s.Name, Wait)
	}
}

// Kill sends SIGKILL, if the process is running, and waits for it to exit.
func (s *Server) Kill() {
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

// StartAll starts the servers at once, as docker compose does, and waits
// until every one is ready.
func StartAll(t testing.TB, servers ...*Server) {
	t.Helper()
	for _, s := range servers {
		s.Start(t)
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.Ready(t) }()
	}
	var all []error
	for range servers {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		t.Fatal(err)
	}
}
