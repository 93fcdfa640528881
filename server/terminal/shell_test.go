package terminal_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/eventually"
)

// With Config.Processes, a line runs in a shell: the lesson's and the
// labs' lines as they are printed.
func TestShellRunsTheLessonsLines(t *testing.T) {
	t.Parallel()
	lab := startTerminal(t, processes)
	tm := open(t, lab, nil)
	// The member's address, as etcdctl's --endpoints names it, and the
	// address the page reached kubelab at, as kubectl's log names it.
	member := strings.TrimPrefix(lab.EtcdClient().Endpoints()[0], "http://")
	server := lab.URL()
	for _, tc := range []struct{ line, want string }{
		{"kubectl -n internals-demo label pod ssa-demo demo-round=$(date +%s) --overwrite", `^pod/ssa-demo labeled\n$`},
		{"kubectl get --raw /api/v1/namespaces/internals-demo/pods | jq -r .metadata.resourceVersion", `^[1-9][0-9]*\n$`},
		{"kubectl -n internals-demo get pods -o json | jq -c '{kind, metadata}'", `^\{"kind":"List","metadata":\{"resourceVersion":""\}\}\n$`},
		{"for i in $(seq 3); do echo round $i; done | wc -l", `^3\n$`},
		{"kubectl get pods -o name | grep 'demo$' | head -n 1", `^pod/ssa-demo\n$`},
		{"NS=internals-demo; kubectl -n $NS get pod ssa-demo -o jsonpath='{.metadata.name}' && echo", `^ssa-demo\n$`},
		{"kubectl apply -f - <<'EOF'\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a-heredoc\ndata:\n  x: $(not expanded)\nEOF",
			`^configmap/from-a-heredoc created\n$`},
		{"kubectl get configmap from-a-heredoc -o jsonpath='{.data.x}'", `^\$\(not expanded\)$`},
		{"kubectl get pods -o name > pods.txt; sort -r pods.txt | uniq -c | cut -c9- | tr a-z A-Z | tail -n 1", `^POD/`},
		{"echo a:b:c | cut -d: -f2,3; printf '%s\\n' x y | sort -r | head -1; echo aGk= | base64 -d; echo", `^b:c\ny\nhi\n$`},
		{"date -u -d @0 +%F", `^1970-01-01\n$`},
		{"sleep 0.1 && echo slept", `^slept\n$`},
		// etcdctl in a pipe, as the lesson prints it; kubectl -v logs
		// to the line's stderr, and the next kubectl logs no more.
		{"etcdctl get /registry/pods/internals-demo/ssa-demo --print-value-only | head -c 24 | od -c", `^0000000 +k +8 +s +\\0 +\\n `},
		{"etcdctl --endpoints=" + member + " get /registry/pods/internals-demo/ssa-demo --keys-only | wc -l", `^2\n$`},
		{`kubectl get pods -v=6 2>&1 | grep -c '"Response" verb="GET" url="` + server + `/api/v1/namespaces/internals-demo/pods?limit=500" status="200 OK"'`, `^1\n$`},
		{"kubectl get pods 2>&1 | grep -c Response; echo $?", `^0\n1\n$`},
	} {
		r := tm.run(tc.line, "")
		if r.Code != 0 || !regexp.MustCompile(tc.want).MatchString(r.Out) {
			t.Errorf("%s\ngot %+v, want out matching %s", tc.line, r, tc.want)
		}
	}
	// The stdin box is the line's stdin.
	if r := tm.run("kubectl create --dry-run=client -o name -f -", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: boxed\n"); r.Out != "configmap/boxed\n" {
		t.Errorf("the stdin box: %+v", r)
	}
	// Exit statuses are the shell's.
	if r := tm.run("kubectl get pod no-such-pod || echo missing", ""); r.Code != 0 || r.Out != "missing\n" {
		t.Errorf("||: %+v", r)
	}
	if r := tm.run("echo x | grep y", ""); r.Code != 1 {
		t.Errorf("grep without a match: %+v", r)
	}
}

// TestHostileShell: what a curious student tries in the shell. Nothing
// runs but its tools, no file outside the session's scratch directory is
// read or written, and a session's files are its own.
func TestHostileShell(t *testing.T) {
	t.Parallel()
	lab := startTerminal(t, processes)
	tm := open(t, lab, nil)
	secret := secretFile(t)
	outside := t.TempDir() + "/escaped"
	for line, want := range map[string]string{
		"cat " + secret:                    "permission denied",
		"echo x > " + outside:              "permission denied",
		"cd / && ls":                       "cd: ",
		"source " + secret:                 "permission denied",
		"jq . " + secret:                   "permission denied",
		"grep -r SECRET " + secret:         "unknown shorthand flag",
		"bash -c id":                       "not a program of this terminal's shell",
		"exec /bin/ls":                     "not a program of this terminal's shell",
		"vi notes":                         "not a program of this terminal's shell",
		"cat <(echo hi)":                   "process substitution",
		"type ls":                          "looks names up among the server's files",
		"command -v kubectl":               "looks names up among the server's files",
		"echo | etcdctl put /registry/x y": "only reads",
		"seq 2 | etcdctl --endpoints=http://10.0.0.1:2379 get /": "embedded member only",
		"kubectl get pods --kubeconfig=" + secret:                "no kubeconfig here",
		"kubectl get pods -f " + secret:                          "cannot read files",
		"echo $PATH $KUBECONFIG | grep -c /":                     "",
	} {
		r := tm.run(line, "")
		if strings.Contains(r.all(), "SERVER-SECRET-CONTENT") {
			t.Errorf("%s: read the server's file: %+v", line, r)
		}
		if want == "" {
			if strings.TrimSpace(r.Out) != "0" {
				t.Errorf("%s: the server's environment shows: %+v", line, r)
			}
			continue
		}
		if r.Code == 0 || !strings.Contains(r.all(), want) {
			t.Errorf("%s: %+v, want refused with %q", line, r, want)
		}
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a redirect wrote %s", outside)
	}

	// A session's scratch directory is its own, and holds its files from
	// one line to the next; a file is at most 16 MiB.
	if r := tm.run("echo mine > notes.txt && cat notes.txt", ""); r.Out != "mine\n" {
		t.Errorf("a file in the scratch directory: %+v", r)
	}
	if r := tm.run("cat notes.txt", ""); r.Out != "mine\n" {
		t.Errorf("the file on the next line: %+v", r)
	}
	other := open(t, lab, nil)
	if r := other.run("cat notes.txt", ""); r.Code == 0 || strings.Contains(r.Out, "mine") {
		t.Errorf("another session read the file: %+v", r)
	}
	if r := tm.run("seq 1 5000000 > big.txt", ""); r.Code == 0 || !strings.Contains(r.Err, "the scratch directory is full") {
		t.Errorf("a file past 16 MiB: %+v", r)
	}
	if r := tm.run("rm big.txt && ls", ""); r.Code != 0 || r.Out != "notes.txt\n" {
		t.Errorf("rm, then ls: %+v", r)
	}
	// The directory holds 16 MiB at most: past it, a write is refused
	// until files are removed.
	r := tm.run("for i in $(seq 40); do seq 1 200000 > f$i || break; done; ls | wc -l", "")
	if r.Code != 0 || !strings.Contains(r.Err, "the scratch directory is full") {
		t.Errorf("filling the scratch directory: %+v", r)
	}
	if r := tm.run("rm f* && echo again > g && cat g", ""); r.Out != "again\n" {
		t.Errorf("after rm: %+v", r)
	}
	if r := tm.run("rm /etc/hostname ..", ""); r.Code == 0 || !strings.Contains(r.Err, "permission denied") {
		t.Errorf("rm outside the scratch directory: %+v", r)
	}
	// Writes that began together share the directory's room: four
	// background jobs of 9 MB each leave it within 16 MiB. (Many more
	// blocked jobs can end the line's own process, once their threads'
	// stacks no longer fit its address space: a line's own loss.)
	// On a busy machine the blocked writers' threads can be what ends the
	// line (the memory cap): the directory's bound must hold either way,
	// and it is counted by a line of its own.
	r = tm.run("rm -f *; seq 150000 > a; for i in $(seq 4); do (cat a a a a a a a a a a) > f$i & done; wait", "")
	if !strings.Contains(r.Err, "the scratch directory is full") && !strings.Contains(r.Err, "stopped: the command needed more than") {
		t.Errorf("four writers at once: neither refused by the directory's bound nor stopped by the memory cap: %+v", r)
	}
	r = tm.run("cat * | wc -c", "")
	if n, err := strconv.Atoi(strings.TrimSpace(r.Out)); err != nil || n > 16<<20 {
		t.Errorf("after four writers at once, the directory holds %q bytes (%v), want at most 16 MiB: %+v", r.Out, err, r)
	}
	tm.run("rm -f *", "")
}

// TestHostileShellInterpreter: what the interpreter itself does past the
// shell's handlers is refused, or finds nothing of the server's.
func TestHostileShellInterpreter(t *testing.T) {
	t.Parallel()
	tm := open(t, startTerminal(t, processes), nil)
	wd, _ := os.Getwd()
	for line, check := range map[string]func(result) bool{
		// Its own temporary files, opened past the open handler.
		"echo x > $TMPDIR/sh-interp-1": func(r result) bool { return r.Code != 0 },
		"echo x > /tmp/sh-interp-1":    func(r result) bool { return r.Code != 0 && strings.Contains(r.Err, "permission denied") },
		"eval 'cat <(echo hi)'": func(r result) bool {
			return !strings.Contains(r.Out, "hi") && strings.Contains(r.Err, "cannot create fifo")
		},
		// Lookups of the server's files.
		"builtin type -P ls":      func(r result) bool { return r.Code != 0 && strings.Contains(r.Err, "server's files") },
		"PATH=/etc source passwd": func(r result) bool { return r.Code != 0 && strings.Contains(r.Err, "readonly") },
		// pwd says what $PWD says, and never resolves it.
		"PWD=/proc/$PPID/cwd pwd -P": func(r result) bool { return r.Code == 0 && !strings.Contains(r.Out, wd) },
	} {
		if r := tm.run(line, ""); !check(r) {
			t.Errorf("%s: %+v", line, r)
		}
	}
	if _, err := os.Stat("/tmp/sh-interp-1"); err == nil {
		t.Error("a line wrote /tmp/sh-interp-1")
	}
}

// TestHostileShellLoops: a loop that prints for ever stops at the output
// cap; one that starts kubectl in the background for ever ends, every
// kubectl with it, on Ctrl-C.
func TestHostileShellLoops(t *testing.T) {
	lab := startTerminal(t, processes)
	tm := open(t, lab, nil)
	if r := tm.run("while :; do echo yyyyyyyyyyyyyyyyyyyy; done", ""); r.Code == 0 || !strings.Contains(r.Err, "wrote more than 1 MiB") {
		t.Errorf("a loop that prints for ever: code %d, err %q", r.Code, r.Err)
	}
	tm.send(map[string]any{"t": "run", "line": "while :; do kubectl get pods -o name & sleep 0.05; done"})
	eventually.Holds(t, "the loop's process running", func() (bool, error) { return len(commandProcesses(t)) == 1, nil })
	start := time.Now()
	tm.send(map[string]any{"t": "int"})
	r := tm.wait(30 * time.Second)
	eventually.Holds(t, "the loop's process gone", func() (bool, error) { return len(commandProcesses(t)) == 0, nil })
	t.Logf("Ctrl-C on a loop of background kubectls: its process gone after %v", time.Since(start).Round(time.Millisecond))
	if r.Code != 130 || time.Since(start) > 2*time.Second {
		t.Errorf("after Ctrl-C: %+v, %v", r, time.Since(start))
	}
}

// TestShellTools: each text tool as its GNU namesake answers, for the
// flags it takes.
func TestShellTools(t *testing.T) {
	t.Parallel()
	tm := open(t, startTerminal(t, processes), nil)
	for line, want := range map[string]string{
		`printf 'a(b\nab\nabb\n' | grep 'ab\+'`:           "ab\nabb\n",
		`printf 'a(b\nab\n' | grep -F 'a(b'`:              "a(b\n",
		`printf 'x1\ny2\nx3\n' | grep -v -n y`:            "1:x1\n3:x3\n",
		`printf 'Kube\nkube\n' | grep -ic KUBE`:           "2\n",
		`printf 'a=1 b=22\n' | grep -oE '[0-9]+'`:         "1\n22\n",
		`seq 5 | head -n -2`:                              "1\n2\n3\n",
		`seq 5 | head -2`:                                 "1\n2\n",
		`seq 5 | tail -n +4`:                              "4\n5\n",
		`seq 5 | tail -2`:                                 "4\n5\n",
		`printf 'abcdef' | tail -c 2`:                     "ef",
		`seq 2000 | head -c 1K | wc -c`:                   "1024\n",
		`seq 2000 | head -c 1kB | wc -c`:                  "1000\n",
		`seq 3 | head -c 10G`:                             "1\n2\n3\n",
		`printf 'b 2\na 10\nc 1\n' | sort -n -k 2`:        "c 1\nb 2\na 10\n",
		`printf 'b\na\nb\n' | sort -u`:                    "a\nb\n",
		`printf 'a\na\nb\n' | uniq -c`:                    "      2 a\n      1 b\n",
		`printf 'one two\nthree\n' | wc`:                  "      2       3      14\n",
		`echo a,b,c,d | cut -d, -f1,3-`:                   "a,c,d\n",
		`echo kubelab | cut -c 1-4`:                       "kube\n",
		`echo 'Hello World' | tr '[:lower:]' '[:upper:]'`: "HELLO WORLD\n",
		`echo 'a  b   c' | tr -s ' '`:                     "a b c\n",
		`echo hello | tr -d l`:                            "heo\n",
		`seq 2 2 6`:                                       "2\n4\n6\n",
		`seq -s , 3`:                                      "1,2,3\n",
		`echo -n hi | base64`:                             "aGk=\n",
		`echo '{"a":{"b":[1,2]}}' | jq '.a'`:              "{\n  \"b\": [\n    1,\n    2\n  ]\n}\n",
		`echo '{"n":"x"}' | jq -r --arg v y '.n + $v'`:    "xy\n",
		`printf '1 2 3' | jq -s -c .`:                     "[1,2,3]\n",
		`jq -n '1 + 1'`:                                   "2\n",
		`printf 'k8s\0\n\002v1\200abcdefghijklmnopqrstuvwxyz\a\b\f\r\t\v\\ ' | od -c`: "0000000   k   8   s  \\0  \\n 002   v   1 200   a   b   c   d   e   f   g\n" +
			"0000020   h   i   j   k   l   m   n   o   p   q   r   s   t   u   v   w\n" +
			"0000040   x   y   z  \\a  \\b  \\f  \\r  \\t  \\v   \\    \n0000053\n",
		`printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabc' | od -c`: "0000000   a   a   a   a   a   a   a   a   a   a   a   a   a   a   a   a\n*\n" +
			"0000060   a   a   a   a   a   b   c\n0000067\n",
		`printf abc | od`:    "0000000 061141 000143\n0000003\n",
		`printf abc | od -b`: "0000000 141 142 143\n0000003\n",
		`printf '' | od -c`:  "0000000\n",
	} {
		if r := tm.run(line, ""); r.Out != want {
			t.Errorf("%s\ngot %q (err %q, code %d), want %q", line, r.Out, r.Err, r.Code, want)
		}
	}
	if r := tm.run(`echo '{}' | jq -e .missing`, ""); r.Code != 1 || r.Out != "null\n" {
		t.Errorf("jq -e on null: %+v", r)
	}
	if r := tm.run(`echo '{' | jq .`, ""); r.Code == 0 || !strings.Contains(r.Err, "jq: error") {
		t.Errorf("jq on bad JSON: %+v", r)
	}
}

// TestShellLoopsOfCommands: a line may run kubectl and etcdctl more times
// than its process may hold descriptors (256): their connections to the
// server are the line's, not each run's.
func TestShellLoopsOfCommands(t *testing.T) {
	t.Parallel()
	tm := open(t, startTerminal(t, processes), nil)
	for _, line := range []string{
		"for i in $(seq 300); do kubectl get pod ssa-demo -o name; done | grep -c pod/ssa-demo",
		"for i in $(seq 300); do etcdctl get /registry/pods/internals-demo/ssa-demo --keys-only; done | grep -c /registry/pods/internals-demo/ssa-demo",
	} {
		tm.send(map[string]any{"t": "run", "line": line})
		if r := tm.wait(3 * time.Minute); r.Code != 0 || r.Out != "300\n" {
			t.Errorf("%s: %+v", line, r)
		}
	}
}
