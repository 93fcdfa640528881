package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// mayLinkKubernetes are the packages whose binaries may link
// k8s.io/kubernetes (the kube core): kubelab's binary, and the package
// that starts kube-apiserver. Any other test binary linking it would
// compile and link kube's code too, and CI's time would grow with each.
var mayLinkKubernetes = map[string]bool{
	"github.com/kubelab/kubelab/cmd/kubelab":              true,
	"github.com/kubelab/kubelab/server/controlplane":      true,
	"github.com/kubelab/kubelab/cmd/kubelab.test":         true,
	"github.com/kubelab/kubelab/server/controlplane.test": true,
}

func TestOnlyTheBinaryLinksKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "github.com/kubelab/kubelab/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	linkers := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		pkg, deps, _ := strings.Cut(sc.Text(), " ")
		// A test variant is "pkg [pkg.test]"; its binary is "pkg.test".
		pkg, _, _ = strings.Cut(pkg, " ")
		if !strings.Contains(" "+deps+" ", " k8s.io/kubernetes/") {
			continue
		}
		linkers++
		if !mayLinkKubernetes[pkg] {
			t.Errorf("%s links k8s.io/kubernetes: only cmd/kubelab and server/controlplane may (a test that needs the kube core runs the kubelab binary)", pkg)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if linkers == 0 {
		t.Fatal("no package links k8s.io/kubernetes: the list is wrong, or the kube core is gone (then remove this test)")
	}
}
