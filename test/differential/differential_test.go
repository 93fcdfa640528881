// Package differential runs one table of scenarios against kubelab and
// against the real kube-apiserver, and compares what a client sees.
// Run it with test/differential/run.sh, which starts both.
package differential

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// differences are the observations kubelab is known not to match, and why,
// by scenario and observation; docs/CONFORMANCE.md carries the same reasons.
// None is known now: every row of the table matches.
var differences = map[string]string{}

func TestDifferential(t *testing.T) {
	for _, v := range []string{"KUBELAB_BIN", "KUBE_REFERENCE", "REF_DIR", "REF_BIN", "ETCDCTL"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run test/differential/run.sh", v)
		}
	}
	kube := &kubeServer{script: os.Getenv("KUBE_REFERENCE") + "/cluster.sh", refBin: os.Getenv("REF_BIN"), refDir: os.Getenv("REF_DIR")}
	lab := startKubelab(t, os.Getenv("KUBELAB_BIN"), os.Getenv("REF_BIN"))
	t.Cleanup(lab.Stop)
	servers := []server{lab, kube}

	var report strings.Builder
	report.WriteString("| scenario | observation | kube-apiserver v1.37.2 | kubelab | match |\n|---|---|---|---|---|\n")
	for _, sc := range scenarios {
		got := map[string][]string{}
		for _, s := range servers {
			t.Run(sc.name+"/"+s.Name(), func(t *testing.T) { got[s.Name()] = sc.run(t, s, s.Client(t)) })
		}
		want, have := got["kube-apiserver"], got["kubelab"]
		for i := range max(len(want), len(have)) {
			w, h := at(want, i), at(have, i)
			label, wv, _ := strings.Cut(w, ": ")
			_, hv, _ := strings.Cut(h, ": ")
			match := "yes"
			if wv != hv {
				match = "no"
				if reason, ok := differences[sc.name+"/"+label]; ok {
					match = "no: " + reason
				} else {
					t.Errorf("%s, %s:\n  kube-apiserver: %s\n  kubelab:        %s", sc.name, label, wv, hv)
				}
			}
			fmt.Fprintf(&report, "| %s | %s | %s | %s | %s |\n", sc.name, label, cell(wv), cell(hv), match)
		}
	}
	t.Log("\n" + report.String())
	if path := os.Getenv("DIFF_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(missing): (missing)"
}

func cell(s string) string { return "`" + strings.ReplaceAll(s, "|", "\\|") + "`" }
