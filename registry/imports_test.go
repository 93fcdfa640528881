package registry_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	module   = "github.com/kubelab/kubelab"
	etcd3    = module + "/storage/etcd3"
	httptest = "net/http/httptest"
)

// mayImportEtcd3 are the packages that may reach the etcd3 store: the
// registry, the storage layer itself and the wiring.
func mayImportEtcd3(pkg string) bool {
	return pkg == module+"/registry" || pkg == module+"/server" ||
		pkg == module+"/storage" || strings.HasPrefix(pkg, module+"/storage/") ||
		strings.HasPrefix(pkg, module+"/cmd/")
}

// knownExceptions still import etcd3, each for a reason of its own, in
// the files named (none: any file of the package). Remove a row once its
// reason is gone; a row that is no longer needed fails the test too.
var knownExceptions = map[string]struct {
	files  []string
	reason string
}{
	module + "/pipeline/internal/storetest": {nil,
		"a fixture of the pipeline's own tests, which build real etcd3 stores to feed its informers; no production code imports it"},
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

// packages lists the module's packages, without their tests.
func packages(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var all []listed
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
	return all
}

// isTestFixture: a package of helpers for tests only (kubelabtest,
// browsertest, storetest...), which no production code imports.
func isTestFixture(pkg string) bool {
	return strings.Contains(pkg, "/internal/") && strings.HasSuffix(pkg, "test")
}

// TestNoProductionCodeUsesHTTPTest: kubelab's own components call the
// registry, and a view that shows an HTTP exchange sends a request; none
// records a response with net/http/httptest, a tool for tests.
func TestNoProductionCodeUsesHTTPTest(t *testing.T) {
	for _, p := range packages(t) {
		if slices.Contains(p.Imports, httptest) && !isTestFixture(p.ImportPath) {
			t.Errorf("%s imports %s outside its tests: call the registry, or send a real request", p.ImportPath, httptest)
		}
	}
}

// TestOnlyTheRegistryImportsEtcd3: every write goes through the registry,
// so no package outside it, storage and the wiring may import the etcd3
// store (its tests may, to build fixtures).
func TestOnlyTheRegistryImportsEtcd3(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range packages(t) {
		if !slices.Contains(p.Imports, etcd3) || mayImportEtcd3(p.ImportPath) {
			continue
		}
		exc, known := knownExceptions[p.ImportPath]
		if !known {
			t.Errorf("%s imports %s: write through the registry (registry.Store), or read through the wiring", p.ImportPath, etcd3)
			continue
		}
		seen[p.ImportPath] = true
		if exc.files == nil {
			continue
		}
		for _, f := range p.GoFiles {
			if !slices.Contains(exc.files, f) && importsEtcd3(t, filepath.Join(p.Dir, f)) {
				t.Errorf("%s/%s imports %s; only %v may, until: %s", p.ImportPath, f, etcd3, exc.files, exc.reason)
			}
		}
	}
	for pkg := range knownExceptions {
		if !seen[pkg] {
			t.Errorf("%s no longer imports %s: remove it from knownExceptions", pkg, etcd3)
		}
	}
}

func importsEtcd3(t *testing.T, path string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == etcd3 {
			return true
		}
	}
	return false
}
