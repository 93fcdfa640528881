package clitest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/clitest"
)

func TestKubectlIsTheRealKubectl(t *testing.T) {
	stdout, stderr, err := clitest.Run(t, clitest.Kubectl(t), "version", "--client", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl version: %v\n%s", err, stderr)
	}
	var v struct {
		ClientVersion struct {
			GitVersion string `json:"gitVersion"`
			Major      string `json:"major"`
			Minor      string `json:"minor"`
		} `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, stdout)
	}
	if !strings.HasPrefix(v.ClientVersion.GitVersion, "v1.37") {
		t.Errorf("clientVersion.gitVersion = %q, want v1.37.*", v.ClientVersion.GitVersion)
	}
	if v.ClientVersion.Major != "1" || v.ClientVersion.Minor != "37" {
		t.Errorf("clientVersion major.minor = %q.%q, want 1.37", v.ClientVersion.Major, v.ClientVersion.Minor)
	}
}

func TestEtcdctlIsTheRealEtcdctl(t *testing.T) {
	stdout, stderr, err := clitest.Run(t, clitest.Etcdctl(t), "version")
	if err != nil {
		t.Fatalf("etcdctl version: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "etcdctl version: 3.7") {
		t.Errorf("etcdctl version printed %q, want etcdctl version: 3.7.*", stdout)
	}
}

func TestRunReportsExitAndStderr(t *testing.T) {
	// An unknown subcommand is kubectl's own usage error: exit 1, message on stderr.
	_, stderr, err := clitest.Run(t, clitest.Kubectl(t), "no-such-subcommand")
	if err == nil {
		t.Fatal("kubectl no-such-subcommand succeeded")
	}
	if !strings.Contains(stderr, "unknown command") {
		t.Errorf("stderr = %q, want it to mention the unknown command", stderr)
	}
}

func TestRunWithStdinAndTimeout(t *testing.T) {
	out, _, err := clitest.RunWith(t, clitest.Options{Stdin: "hello"}, "cat")
	if err != nil || out != "hello" {
		t.Fatalf("cat with stdin: %q, %v", out, err)
	}
	start := time.Now()
	_, _, err = clitest.RunWith(t, clitest.Options{Timeout: 200 * time.Millisecond}, "sleep", "30")
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("sleep 30 with a 200ms timeout: err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout took %v to stop the command", d)
	}
}

func TestRepoRootSkipsTheToolsModule(t *testing.T) {
	root, err := clitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "build.sh")); err != nil {
		t.Fatalf("RepoRoot() = %s, which has no tools/build.sh: %v", root, err)
	}
	t.Chdir(filepath.Join(root, "tools", "kubectl"))
	got, err := clitest.RepoRoot()
	if err != nil || got != root {
		t.Fatalf("RepoRoot() from tools/kubectl = %q, %v; want %q (past tools/go.mod)", got, err, root)
	}
}
