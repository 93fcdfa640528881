package terminal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server/terminal"
)

// term is one browser terminal, driven as the page drives it.
type term struct {
	t    testing.TB
	conn *websocket.Conn
	// Hello is the server's greeting.
	Hello msg
}

type msg struct {
	T     string   `json:"t"`
	D     string   `json:"d"`
	Code  *int     `json:"code"`
	ID    int      `json:"id"`
	Items []string `json:"items"`
	User  string   `json:"user"`
	NS    string   `json:"ns"`
	Etcd  *bool    `json:"etcd"`
}

// open dials the terminal as a page of the lab would, with header's
// credentials (nil: none, the local user).
func open(t testing.TB, lab served, header http.Header) *term {
	t.Helper()
	h := http.Header{"Origin": {lab.URL()}}
	for k, v := range header {
		h[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(lab.URL(), "http")+"/ui/ws/terminal", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial terminal: %v (%d)", err, code)
	}
	c.SetReadLimit(4 << 20)
	t.Cleanup(func() { c.CloseNow() })
	tm := &term{t: t, conn: c}
	tm.Hello = tm.next(10 * time.Second)
	if tm.Hello.T != "hello" {
		t.Fatalf("first message %+v, want hello", tm.Hello)
	}
	return tm
}

func (tm *term) send(m map[string]any) {
	tm.t.Helper()
	b, _ := json.Marshal(m)
	if err := tm.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		tm.t.Fatalf("send: %v", err)
	}
}

func (tm *term) next(timeout time.Duration) msg {
	tm.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, b, err := tm.conn.Read(ctx)
	if err != nil {
		tm.t.Fatalf("read: %v", err)
	}
	var m msg
	if err := json.Unmarshal(b, &m); err != nil {
		tm.t.Fatalf("bad message %s", b)
	}
	return m
}

// complete sends a Tab for line and returns its completions.
func (tm *term) complete(line string) []string {
	tm.t.Helper()
	tm.send(map[string]any{"t": "complete", "id": 1, "line": line})
	m := tm.next(30 * time.Second)
	if m.T != "comp" {
		tm.t.Fatalf("a Tab answered %+v", m)
	}
	return m.Items
}

// result is a finished command: what it printed and its exit status.
type result struct {
	Out, Err string
	Code     int
}

func (r result) all() string { return r.Out + r.Err }

// run runs line with stdin and waits for it to end.
func (tm *term) run(line, stdin string) result {
	tm.t.Helper()
	tm.send(map[string]any{"t": "run", "line": line, "stdin": stdin})
	return tm.wait(60 * time.Second)
}

// wait reads the output of the running command until it exits.
func (tm *term) wait(timeout time.Duration) result {
	tm.t.Helper()
	var r result
	deadline := time.Now().Add(timeout)
	for {
		m := tm.next(time.Until(deadline))
		switch m.T {
		case "o":
			r.Out += m.D
		case "e":
			r.Err += m.D
		case "exit":
			r.Code = *m.Code
			return r
		}
	}
}

// until reads output until it contains want, and returns all read so far.
func (tm *term) until(want string, timeout time.Duration) string {
	tm.t.Helper()
	var out strings.Builder
	deadline := time.Now().Add(timeout)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("no %q in %q", want, out.String())
		}
		m := tm.next(time.Until(deadline))
		if m.T == "exit" {
			tm.t.Fatalf("the command ended (%d) before %q: %q", *m.Code, want, out.String())
		}
		out.WriteString(m.D)
	}
	return out.String()
}

func TestKubectlRunsAsTheLocalUser(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	tm := open(t, lab, nil)
	if tm.Hello.NS != "internals-demo" {
		t.Errorf("namespace %q, want the demo's", tm.Hello.NS)
	}

	t.Run("OKGet", func(t *testing.T) {
		r := tm.run("kubectl get pods", "")
		if r.Code != 0 || !strings.Contains(r.Out, "NAME") || !strings.Contains(r.Out, "ssa-demo") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("OKApplyFromStdin", func(t *testing.T) {
		yaml := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-terminal\ndata:\n  lesson: watch\n"
		r := tm.run("kubectl apply -f -", yaml)
		if r.Code != 0 || !strings.Contains(r.Out, "configmap/from-terminal created") {
			t.Fatalf("%+v", r)
		}
		r = tm.run(`kubectl get configmap from-terminal -o jsonpath='{.data.lesson}'`, "")
		if r.Out != "watch" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("OKCanIAnswersNoWithoutStoppingTheServer", func(t *testing.T) {
		r := tm.run("kubectl auth can-i create pods --as=nobody", "")
		if r.Code != 1 || strings.TrimSpace(r.Out) != "no" {
			t.Fatalf("%+v", r)
		}
		if r := tm.run("kubectl get ns default -o name", ""); r.Out != "namespace/default\n" {
			t.Fatalf("the server is gone: %+v", r)
		}
	})
	t.Run("OKErrorsAreKubectls", func(t *testing.T) {
		r := tm.run("kubectl get pod no-such-pod", "")
		if r.Code != 1 || !strings.Contains(r.Err, `Error from server (NotFound): pods "no-such-pod" not found`) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("OKVersion", func(t *testing.T) {
		r := tm.run("kubectl version", "")
		if r.Code != 0 || !strings.HasPrefix(r.Out, "Client Version: v1.37.2\n") || !strings.Contains(r.Out, "Server Version: v1.37") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("OKExplain", func(t *testing.T) {
		r := tm.run("kubectl explain pod.spec.nodeName", "")
		if r.Code != 0 || !strings.Contains(r.Out, "nodeName") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("OKComplete", func(t *testing.T) {
		tm.send(map[string]any{"t": "complete", "id": 7, "line": "kubectl get po"})
		m := tm.next(30 * time.Second)
		if m.T != "comp" || m.ID != 7 || !contains(m.Items, "pods") {
			t.Fatalf("%+v", m)
		}
		tm.send(map[string]any{"t": "complete", "id": 8, "line": "kubectl get pods ssa"})
		if m := tm.next(30 * time.Second); !contains(m.Items, "ssa-demo") {
			t.Fatalf("%+v", m)
		}
	})
	t.Run("OKEtcdctlGet", func(t *testing.T) {
		r := tm.run("etcdctl get /registry/pods/internals-demo/ssa-demo --keys-only", "")
		if r.Code != 0 || !strings.HasPrefix(r.Out, "/registry/pods/internals-demo/ssa-demo\n") {
			t.Fatalf("%+v", r)
		}
		r = tm.run("etcdctl endpoint status -w table", "")
		if r.Code != 0 || !strings.Contains(r.Out, "IS LEADER") {
			t.Fatalf("%+v", r)
		}
		refusedAs(t, tm, "etcdctl put /registry/x y", "only reads")
		refusedAs(t, tm, "etcdctl --endpoints=http://10.0.0.1:2379 get /", "embedded member only")
	})
	t.Run("OKEtcdctlWatchUntilCtrlC", func(t *testing.T) {
		// From the revision after now: the watch replays the create
		// however late it opens, as a resumed watch does.
		r := tm.run("etcdctl get /registry/namespaces/default -w json", "")
		rev := regexp.MustCompile(`"revision":(\d+)`).FindStringSubmatch(r.Out)
		if r.Code != 0 || rev == nil {
			t.Fatalf("the current revision: %+v", r)
		}
		next, _ := strconv.ParseInt(rev[1], 10, 64)
		tm.send(map[string]any{"t": "run", "line": fmt.Sprintf("etcdctl watch /registry/configmaps/internals-demo/ --prefix --rev=%d", next+1)})
		other := open(t, lab, nil)
		if r := other.run("kubectl create configmap watched --from-literal=a=b", ""); r.Code != 0 {
			t.Fatalf("%+v", r)
		}
		tm.until("PUT\n/registry/configmaps/internals-demo/watched\n", 20*time.Second)
		tm.send(map[string]any{"t": "int"})
		if r := tm.wait(20 * time.Second); r.Code != 130 {
			t.Fatalf("after Ctrl-C: %+v", r)
		}
	})
}

// TestRefusalsInThai: the terminal's own words follow the reader's
// language; kubectl's stay kubectl's.
func TestRefusalsInThai(t *testing.T) {
	t.Parallel()
	lab := startTerminal(t)
	tm := open(t, lab, http.Header{"Cookie": {"lang=th"}})
	if r := tm.run("kubectl edit pod ssa-demo", ""); !strings.Contains(r.Err, "โปรแกรมแก้ไข") {
		t.Fatalf("%+v", r)
	}
	if r := tm.run("kubectl get pod nope", ""); !strings.Contains(r.Err, "not found") {
		t.Fatalf("%+v", r)
	}
}

// BenchmarkKubectlGetPods is one kubectl get pods in the terminal, from
// the line sent to its exit: a fresh command tree, discovery, the list.
// It runs over the API behind the front door (RBAC, admission, traces),
// as in a local kubelab.
func BenchmarkKubectlGetPods(b *testing.B) {
	b.Run("InTheServer", func(b *testing.B) { benchmarkKubectlGetPods(b) })
	b.Run("InAProcess", func(b *testing.B) { benchmarkKubectlGetPods(b, func(c *terminal.Config) { c.Processes = true }) })
}

func benchmarkKubectlGetPods(b *testing.B, options ...func(*terminal.Config)) {
	lab := startTerminal(b, options...)
	tm := open(b, lab, nil)
	b.ResetTimer()
	for range b.N {
		tm.send(map[string]any{"t": "run", "line": "kubectl get pods"})
		for m := tm.next(time.Minute); m.T != "exit"; m = tm.next(time.Minute) {
		}
	}
}

func refusedAs(t *testing.T, tm *term, line, want string) {
	t.Helper()
	if r := tm.run(line, ""); r.Code == 0 || !strings.Contains(r.Err, want) {
		t.Errorf("%s: %+v, want refused with %q", line, r, want)
	}
}

func contains(items []string, s string) bool {
	for _, i := range items {
		if i == s {
			return true
		}
	}
	return false
}

// TestLessonCommandsWork runs the commands a student of the lesson types,
// and more, and fails on any that kubectl could not run in the terminal
// (a panic inside kubectl shows as "kubectl failed").
func TestLessonCommandsWork(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	tm := open(t, lab, nil)
	for _, line := range []string{
		"kubectl get pods -o wide",
		"kubectl get pods -o yaml",
		"kubectl get pods -o json",
		"kubectl get pod ssa-demo -o jsonpath={.metadata.resourceVersion}",
		"kubectl get pods -o custom-columns=NAME:.metadata.name,RV:.metadata.resourceVersion",
		"kubectl get --raw /readyz",
		"kubectl get --raw /apis",
		"kubectl get all",
		"kubectl get ns",
		"kubectl describe pod ssa-demo",
		"kubectl label pod ssa-demo demo-round=one --overwrite",
		"kubectl annotate pod ssa-demo lesson=watch --overwrite",
		`kubectl patch pod ssa-demo --type=merge -p '{"metadata":{"labels":{"demo-round":"two"}}}'`,
		"kubectl create deployment smoke --image=nginx",
		"kubectl set image deployment/smoke nginx=nginx:1.27",
		"kubectl rollout history deployment/smoke",
		"kubectl rollout restart deployment/smoke",
		"kubectl expose deployment smoke --port=80",
		"kubectl create configmap smoke --from-literal=a=b",
		"kubectl create secret generic smoke --from-literal=a=b",
		"kubectl apply --server-side -f -",
		"kubectl delete configmap smoke",
		"kubectl api-resources",
		"kubectl api-versions",
		"kubectl explain pods --recursive",
		"kubectl events",
		"kubectl auth can-i --list",
		"kubectl auth whoami",
		"kubectl cluster-info",
		"kubectl get pods --request-timeout=5s",
		"kubectl get pods --warnings-as-errors",
		"kubectl run smoke-pod --image=nginx --dry-run=server -o name",
		"kubectl delete deployment smoke",
		"kubectl get pods -w --request-timeout=1s",
		"kubectl --help",
		"kubectl get --help",
	} {
		stdin := ""
		if strings.Contains(line, "-f -") {
			stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: smoke-ssa\ndata:\n  a: b\n"
		}
		r := tm.run(line, stdin)
		if strings.Contains(r.all(), "kubectl failed") || (r.Code != 0 && !strings.Contains(line, "-w")) {
			t.Errorf("%s: %+v", line, r)
		}
	}
}
