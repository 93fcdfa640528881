// Package gentest checks in a test that generated code is up to date: it
// reruns the generator into a temporary directory and compares.
package gentest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// UpToDate runs the bash script at script with OPENAPI_OUTPUT_DIR set to a
// temporary directory, offline, and fails the test unless the file it
// writes there equals the checked-in one of the same name in the test's
// directory. regenerate says how to fix a stale copy. It runs a generator,
// a few seconds, so -short skips it.
func UpToDate(t *testing.T, script, file, regenerate string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the generator; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to run the generator: %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "OPENAPI_OUTPUT_DIR="+out, "GOPROXY=off", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v (is the generator downloaded? run `go mod download`)\n%s", script, err, b)
	}
	fresh, err := os.ReadFile(filepath.Join(out, file))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("%s is out of date: %s", file, regenerate)
	}
}
