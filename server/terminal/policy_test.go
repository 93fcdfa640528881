package terminal

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestSplit(t *testing.T) {
	for line, want := range map[string][]string{
		`kubectl get pods`:                                  {"kubectl", "get", "pods"},
		`  kubectl   get  pods  `:                           {"kubectl", "get", "pods"},
		`kubectl get pods -o 'jsonpath={.a b}'`:             {"kubectl", "get", "pods", "-o", "jsonpath={.a b}"},
		`kubectl label pod x "a=b c"`:                       {"kubectl", "label", "pod", "x", "a=b c"},
		`kubectl label pod x a=b\ c`:                        {"kubectl", "label", "pod", "x", "a=b c"},
		`kubectl get pods -l 'a in (x,y)'`:                  {"kubectl", "get", "pods", "-l", "a in (x,y)"},
		`kubectl get "" pods`:                               {"kubectl", "get", "", "pods"},
		`kubectl annotate pod x 'it''s=1'`:                  {"kubectl", "annotate", "pod", "x", "its=1"},
		`kubectl annotate pod x "q=\"x\""`:                  {"kubectl", "annotate", "pod", "x", `q="x"`},
		``:                                                  nil,
		"kubectl get \\\n  pods":                            {"kubectl", "get", "pods"},
		"kubectl get pods \\\n":                             {"kubectl", "get", "pods"},
		`kubectl label pod x a=1   # from another terminal`: {"kubectl", "label", "pod", "x", "a=1"},
		`kubectl label pod x a#b '#c'`:                      {"kubectl", "label", "pod", "x", "a#b", "#c"},
	} {
		got, err := split(line)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("split(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	for line, key := range map[string]string{
		`kubectl get pods | head`:          "shell.operator",
		`kubectl get pods>x`:               "shell.operator",
		`kubectl get pods &`:               "shell.operator",
		`kubectl get pods;id`:              "shell.operator",
		`kubectl get $(id)`:                "shell.expand",
		"kubectl get `id`":                 "shell.expand",
		`kubectl get "$HOME"`:              "shell.expand",
		`kubectl get 'unterminated`:        "shell.unterminated",
		`kubectl get \`:                    "shell.unterminated",
		"kubectl get pods\nkubectl get ns": "shell.lines",
		"kubectl get pods # a\nid":         "shell.lines",
	} {
		_, err := split(line)
		if r, ok := err.(*refusal); !ok || r.key != key {
			t.Errorf("split(%q): %v, want %s", line, err, key)
		}
	}
}

func TestCheckLine(t *testing.T) {
	for line, key := range map[string]string{
		"get pods":                          "",
		"-n kube-system get pods":           "",
		"get pods -n edit":                  "",
		"--as=x get pods":                   "",
		"-n edit get pods":                  "",
		"edit pod x":                        "cmd.edit",
		"-n x edit pod x":                   "cmd.edit",
		"--namespace x exec x -- id":        "cmd.exec",
		"rollout status deploy/x":           "cmd.wait",
		"rollout history deploy/x":          "",
		"get pods --server=https://x":       "flag.server",
		"get pods -shttps://x":              "flag.server",
		"get pods -s=https://x":             "flag.server",
		"get pods --kubeconfig /etc/passwd": "flag.kubeconfig",
		"get pods -v9":                      "flag.verbose",
		"apply -kdir":                       "flag.kustomize",
		"get pods -- --server=x":            "",
	} {
		if got := refusalOf(line, false); got != key {
			t.Errorf("checkLine(%q) = %q, want %q", line, got, key)
		}
	}
	// In a command's own process, kubectl's log is the student's stderr.
	for line, key := range map[string]string{
		"get pods -v9":                "",
		"get pods -v=6":               "",
		"--v=9 get pods":              "",
		"get pods --vmodule=x=9":      "flag.verbose",
		"get pods --log-file=/tmp/x":  "flag.profile",
		"get pods --server=https://x": "flag.server",
	} {
		if got := refusalOf(line, true); got != key {
			t.Errorf("in a child, checkLine(%q) = %q, want %q", line, got, key)
		}
	}
}

// refusalOf is the key of checkLine's refusal of line, or "".
func refusalOf(line string, inChild bool) string {
	if r := checkLine(strings.Fields(line), inChild); r != nil {
		return r.key
	}
	return ""
}

// TestFlagsAreCheckedForEveryCommand: the flag check is the root's
// PersistentPreRunE, which cobra runs only for commands that define none
// of their own. A kubectl upgrade that gave a command one would skip the
// check for it; this fails first.
func TestFlagsAreCheckedForEveryCommand(t *testing.T) {
	g := newClientGetter(identity{}, context.Background(), io.Discard, strings.NewReader(""))
	root := newKubectl(g, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && (c.PersistentPreRun != nil || c.PersistentPreRunE != nil) {
			t.Errorf("%s has a PersistentPreRun of its own: the terminal's flag check would not run for it", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// None of the commands the terminal refuses is in the tree at all.
	for name := range deniedCommands {
		if c, _, err := root.Find([]string{name}); err == nil && c != root {
			t.Errorf("%s is in the command tree", name)
		}
	}
}

// TestWatches: the lines whose kubectl sets a handler for the process's
// termination signals run in a process of their own, whatever the
// spelling of the watch.
func TestWatches(t *testing.T) {
	for line, want := range map[string]bool{
		"get pods -w":                      true,
		"get pods --watch":                 true,
		"get pods --watch=true":            true,
		"get pods --watch-only":            true,
		"get pods -Aw":                     true,
		"events -w":                        true,
		"-n demo get pods -w -o name":      true,
		"get pods":                         false,
		"get pods -o name -l app=web":      false,
		"label pod ssa-demo wave=1":        false,
		"get pods -- -w":                   false,
		"annotate pod x note=--watch-this": false,
	} {
		if got := watches(strings.Fields(line)); got != want {
			t.Errorf("watches(%q) = %v, want %v", line, got, want)
		}
	}
}
