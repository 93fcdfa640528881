package generated

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedIsUpToDate reruns generate.sh into a temporary directory and
// compares: a k8s.io/api or kube-openapi bump, or a new input package, must
// come with a regenerated file. The generator is a go.mod tool, so this runs
// offline once `go mod download` has fetched it (.ci/run does); it takes a
// few seconds, so -short skips it.
func TestGeneratedIsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs openapi-gen; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to run openapi-gen: %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "generate.sh"))
	cmd.Env = append(os.Environ(), "OPENAPI_OUTPUT_DIR="+out, "GOPROXY=off", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v (is the generator downloaded? run `go mod download`)\n%s", err, b)
	}
	const file = "zz_generated.openapi.go"
	fresh, err := os.ReadFile(filepath.Join(out, file))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("generated/%s is out of date: run `go generate ./server/openapi/...`", file)
	}
}
