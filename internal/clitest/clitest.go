// Package clitest finds the real kubectl and etcdctl for tests and runs them.
//
// The binaries come from tools/build.sh, which builds them from the versions
// pinned in tools/go.mod into bin/ at the repository root. A test asks for one
// with Kubectl or Etcdctl and gets, in this order: the path in
// KUBELAB_KUBECTL / KUBELAB_ETCDCTL (set by .ci/run), bin/kubectl / bin/etcdctl
// if present, or a fresh build by tools/build.sh, once per test binary. A tool
// that cannot be had fails the test: a missing tool must never pass for a
// skipped check.
package clitest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// modulePath is the module whose root holds bin/ and tools/.
const modulePath = "github.com/kubelab/kubelab"

// DefaultTimeout bounds one Run.
const DefaultTimeout = 60 * time.Second

// Kubectl returns the path of the kubectl built from k8s.io/kubectl.
func Kubectl(t testing.TB) string {
	t.Helper()
	return tool(t, "kubectl", "KUBELAB_KUBECTL")
}

// Etcdctl returns the path of the etcdctl built from go.etcd.io/etcd/etcdctl.
func Etcdctl(t testing.TB) string {
	t.Helper()
	return tool(t, "etcdctl", "KUBELAB_ETCDCTL")
}

func tool(t testing.TB, name, envVar string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		if err := executable(p); err != nil {
			t.Fatalf("%s=%s: %v", envVar, p, err)
		}
		return p
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("finding %s: %v", name, err)
	}
	p := filepath.Join(root, "bin", name)
	if executable(p) == nil {
		return p
	}
	if out, err := build(root); err != nil {
		t.Fatalf("%s is not installed and `bash tools/build.sh` failed: %v\n%s", name, err, out)
	}
	if err := executable(p); err != nil {
		t.Fatalf("tools/build.sh ran but %s is still missing: %v", name, err)
	}
	return p
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

var (
	buildOnce sync.Once
	buildOut  []byte
	buildErr  error
)

// build runs tools/build.sh once per test binary; the script itself keeps
// binaries that are already fresh and serializes concurrent runs.
func build(root string) ([]byte, error) {
	buildOnce.Do(func() {
		cmd := exec.Command("bash", filepath.Join(root, "tools", "build.sh"))
		cmd.Dir = root
		buildOut, buildErr = cmd.CombinedOutput()
	})
	return buildOut, buildErr
}

// RepoRoot returns the directory of kubelab's go.mod, found by walking up from
// the working directory (go test runs a test in its package's directory).
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if module(filepath.Join(dir, "go.mod")) == modulePath {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or above", modulePath, wd)
		}
	}
}

// module returns the module path declared by the go.mod at p, or "".
func module(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// Options change how RunWith runs a command. The zero value is Run's behaviour.
type Options struct {
	Stdin   string        // fed to the command's standard input
	Env     []string      // added to the test process's environment ("K=V")
	Dir     string        // working directory; the test's own if empty
	Timeout time.Duration // DefaultTimeout if zero
}

// Run runs bin with args, bounded by DefaultTimeout, and returns what it wrote.
// err is non-nil when the command could not start, exited non-zero (an
// *exec.ExitError) or timed out.
func Run(t testing.TB, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return RunWith(t, Options{}, bin, args...)
}

// KubectlWith runs the real kubectl with a kubeconfig.
func KubectlWith(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return Run(t, Kubectl(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// KubectlWithOK is KubectlWith for what a test needs to succeed: a failure
// ends the test.
func KubectlWithOK(t testing.TB, kubeconfig string, args ...string) string {
	t.Helper()
	out, stderr, err := KubectlWith(t, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, stderr)
	}
	return out
}

// RunWith is Run with Options.
func RunWith(t testing.TB, o Options, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = o.Dir
	// kubectl caches discovery per server address; test servers reuse
	// ports, so a cache shared between tests would describe another
	// test's server (its custom resources, say). Each test gets its own.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+cacheDir(t))
	cmd.Env = append(cmd.Env, o.Env...)
	if o.Stdin != "" {
		cmd.Stdin = strings.NewReader(o.Stdin)
	}
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	// A child that keeps the pipes open must not hold the test past the deadline.
	cmd.WaitDelay = 5 * time.Second

	line := strings.Join(append([]string{filepath.Base(bin)}, args...), " ")
	start := time.Now()
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%s: timed out after %v: %w", line, timeout, err)
	}
	status := "ok"
	if err != nil {
		status = err.Error()
	}
	t.Logf("$ %s (%s, %v)", line, status, time.Since(start).Round(time.Millisecond))
	return outBuf.String(), errBuf.String(), err
}

var (
	cacheDirsMu sync.Mutex
	cacheDirs   = map[testing.TB]string{}
)

// cacheDir is the test's own kubectl cache directory.
func cacheDir(t testing.TB) string {
	cacheDirsMu.Lock()
	defer cacheDirsMu.Unlock()
	if d, ok := cacheDirs[t]; ok {
		return d
	}
	d := t.TempDir()
	cacheDirs[t] = d
	t.Cleanup(func() {
		cacheDirsMu.Lock()
		delete(cacheDirs, t)
		cacheDirsMu.Unlock()
	})
	return d
}
