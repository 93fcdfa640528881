package classroom_test

import (
	"context"
	"encoding/json"
	"github.com/kubelab/kubelab/internal/clitest"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestTerminalCommandsInProcessesOfTheirOwn: by default a student's line
// in the page's terminal runs in a child process of the real kubelab
// binary, in its shell, as the student: their namespace, their RBAC. The
// labs' lines run as printed. A go-template that doubles a string 32
// times ends at the command's memory limit with a word on why, and the
// class's server goes on serving.
func TestTerminalCommandsInProcessesOfTheirOwn(t *testing.T) {
	t.Parallel()
	c := startClass(t)
	alice, bob := join(t, c.URL(), "Alice"), join(t, c.URL(), "Bob")
	term := openTerminal(t, c, alice)

	// Lab 1, step 2, as printed: a new student met "there is no shell
	// here" on it.
	line := "kubectl -n " + alice.name + " label pod ssa-demo demo-round=$(date +%s) --overwrite"
	if r := term.run(t, line); r.code != 0 || r.out != "pod/ssa-demo labeled\n" {
		t.Errorf("%q: %+v", line, r)
	}
	if r := term.run(t, "kubectl get --raw /api/v1/namespaces/"+alice.name+"/pods | jq -r '.items[].metadata.name' | grep -c '^ssa-demo$'"); r.code != 0 || r.out != "1\n" {
		t.Errorf("a pipe through jq and grep: %+v", r)
	}

	if r := term.run(t, "kubectl auth whoami -o jsonpath={.status.userInfo.username}"); r.code != 0 || r.out != alice.name {
		t.Errorf("whoami in alice's terminal: %+v", r)
	}
	if r := term.run(t, "kubectl get pods -o name"); r.code != 0 || !strings.Contains(r.out, "pod/ssa-demo") {
		t.Errorf("alice's pods: %+v", r)
	}
	if r := term.run(t, "kubectl -n "+bob.name+" get pods"); r.code == 0 || !strings.Contains(r.err, "Forbidden") {
		t.Errorf("bob's pods from alice's terminal: %+v", r)
	}
	bomb := `kubectl get pods -o go-template='{{$s := "aaaaaaaa"}}{{range 32}}{{$s = printf "%s%s" $s $s}}{{end}}{{len $s}}'`
	start := time.Now()
	r := term.run(t, bomb)
	t.Logf("the template bomb ended after %v: %+v", time.Since(start).Round(time.Millisecond), r)
	if r.code == 0 || !strings.Contains(r.err, "of memory") {
		t.Errorf("the template bomb: %+v", r)
	}
	if out := clitest.KubectlWithOK(t, bob.kubeconfig, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/ssa-demo") {
		t.Errorf("bob's kubectl after the bomb: %q", out)
	}
}

// terminal is a page's terminal websocket.
type terminal struct{ conn *websocket.Conn }

type terminalResult struct {
	out, err string
	code     int
}

// openTerminal dials the terminal as s's page does.
func openTerminal(t *testing.T, c *class, s *student) *terminal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{"Origin": {c.URL()}, "Cookie": {s.cookie()}}
	conn, _, err := websocket.Dial(ctx, "ws://"+c.Addr+"/ui/ws/terminal", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial the terminal: %v", err)
	}
	conn.SetReadLimit(4 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &terminal{conn: conn}
}

// terminalMessage is one message the terminal sends the page.
type terminalMessage struct {
	T    string `json:"t"`
	D    string `json:"d"`
	Code *int   `json:"code"`
}

// send sends line to run.
func (tm *terminal) send(ctx context.Context, t *testing.T, line string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"t": "run", "line": line})
	if err := tm.conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("send %q: %v", line, err)
	}
}

// next reads the terminal's next message; line and so far say what the
// test waited for if it fails.
func (tm *terminal) next(ctx context.Context, t *testing.T, line, soFar string) terminalMessage {
	t.Helper()
	_, b, err := tm.conn.Read(ctx)
	if err != nil {
		t.Fatalf("%q: %v (so far %q)", line, err, soFar)
	}
	var m terminalMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("bad message %s", b)
	}
	return m
}

// run runs line and reads until its exit, within a minute.
func (tm *terminal) run(t *testing.T, line string) terminalResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tm.send(ctx, t, line)
	var r terminalResult
	for {
		switch m := tm.next(ctx, t, line, r.out+r.err); m.T {
		case "o":
			r.out += m.D
		case "e":
			r.err += m.D
		case "exit":
			r.code = *m.Code
			return r
		}
	}
}

// TestTerminalWatchLeavesTheServersStopAlone: kubectl's get --watch sets a
// handler of its own for SIGTERM, and that handler exits the process. Run
// in kubelab's process, a student's watch in the page's terminal made
// docker stop end the whole class at once, with status 1, before kubelab
// had closed a connection or its etcd. With the watch running, SIGTERM
// must still stop kubelab cleanly: status 0, after its "stopped" line.
func TestTerminalWatchLeavesTheServersStopAlone(t *testing.T) {
	t.Parallel()
	c := startClass(t, "--log-level", "info")
	alice := join(t, c.URL(), "Alice")
	term := openTerminal(t, c, alice)
	term.until(t, "kubectl get pods --watch", "ssa-demo")
	c.Stop(t)
	if out := c.Output(); !strings.Contains(out, "msg=stopped") {
		t.Fatalf("kubelab ended without its \"stopped\" line:\n%s", out)
	}
}

// until sends line and reads its output until it shows want, within a
// minute: for a command that does not end by itself, such as a watch.
func (tm *terminal) until(t *testing.T, line, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tm.send(ctx, t, line)
	var out string
	for !strings.Contains(out, want) {
		m := tm.next(ctx, t, line, out)
		if m.T == "exit" {
			t.Fatalf("%q ended before it showed %q: %q", line, want, out)
		}
		out += m.D
	}
}
