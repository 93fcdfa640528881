package openapi

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/spec3"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestOperationsGolden pins every operation of every v3 document for the
// lab's resources (plus apps/v1 deployments, for a named group and a
// cross-group subresource): path, method, operationId, x-kubernetes-action
// and kind, one per line, so that a change shows up as a readable diff
// against what kube-apiserver serves.
func TestOperationsGolden(t *testing.T) {
	_, srv := serve(t, append(labResources(), deployments))
	var names []string
	for name := range getDiscovery(t, srv).Paths {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		doc := getV3(t, srv, name)
		fmt.Fprintf(&b, "# %s\n", name)
		var paths []string
		for p := range doc.Paths.Paths {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			item := doc.Paths.Paths[p]
			for _, m := range []struct {
				method string
				op     *spec3.Operation
			}{{"GET", item.Get}, {"POST", item.Post}, {"PUT", item.Put}, {"PATCH", item.Patch}, {"DELETE", item.Delete}} {
				if m.op == nil {
					continue
				}
				line := fmt.Sprintf("%s %s %s", m.method, p, m.op.OperationId)
				if action, ok := m.op.Extensions["x-kubernetes-action"]; ok {
					line += fmt.Sprintf(" %v %s", action, gvkString(t, m.op))
				}
				fmt.Fprintln(&b, line)
			}
		}
	}
	golden(t, "operations.golden", b.String())
}

// TestPodPathGolden pins one path item in full (docs, parameters, request
// bodies, responses, extensions), the one kubectl edits pods through.
func TestPodPathGolden(t *testing.T) {
	_, srv := serve(t, labResources())
	item := getV3(t, srv, "api/v1").Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"]
	b, err := json.MarshalIndent(item, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "pod-path.v3.json", string(b)+"\n")
}

func gvkString(t *testing.T, op *spec3.Operation) string {
	t.Helper()
	var k map[string]string
	if err := op.Extensions.GetObject("x-kubernetes-group-version-kind", &k); err != nil {
		t.Fatalf("%s: %v", op.OperationId, err)
	}
	return k["group"] + "/" + k["version"] + "/" + k["kind"]
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}
