package terminal_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/server/terminal"
)

// The terminal with Config.Processes: each kubectl command in a child
// process of the binary (this test binary, see TestMain), under memory
// and CPU limits.

func processes(c *terminal.Config) { c.Processes = true }

// TestProcessesRunKubectlAsTheCaller: in a child process, kubectl is the
// same kubectl, acting as the same user, with the stdin box as its stdin.
func TestProcessesRunKubectlAsTheCaller(t *testing.T) {
	t.Parallel()
	inServer, inChild := open(t, startTerminal(t), nil), open(t, startTerminal(t, processes), nil)
	whoami := "kubectl auth whoami -o jsonpath={.status.userInfo.username}"
	if a, b := inServer.run(whoami, ""), inChild.run(whoami, ""); a.Code != 0 || a != b {
		t.Errorf("whoami in the server %+v, in a child process %+v", a, b)
	}
	if r := inChild.run("kubectl get pods", ""); r.Code != 0 || !strings.Contains(r.Out, "ssa-demo") {
		t.Errorf("get pods: %+v", r)
	}
	yaml := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a-child\ndata:\n  lesson: watch\n"
	if r := inChild.run("kubectl apply -f -", yaml); r.Code != 0 || !strings.Contains(r.Out, "configmap/from-a-child created") {
		t.Errorf("apply -f -: %+v", r)
	}
	if r := inChild.run("kubectl auth can-i create pods --as=nobody", ""); r.Code != 1 || strings.TrimSpace(r.Out) != "no" {
		t.Errorf("can-i as nobody: %+v", r)
	}
	if r := inChild.run("kubectl get pod no-such-pod", ""); r.Code != 1 || !strings.Contains(r.Err, `pods "no-such-pod" not found`) {
		t.Errorf("a missing pod: %+v", r)
	}
	// The policy holds in the child as in the server.
	if r := inChild.run("kubectl get pods --kubeconfig=/etc/passwd", ""); r.Code == 0 || !strings.Contains(r.Err, "no kubeconfig here") {
		t.Errorf("--kubeconfig: %+v", r)
	}
	if items := inChild.complete("kubectl get po"); !contains(items, "pods") {
		t.Errorf("a Tab: %q", items)
	}
}

// templateBomb doubles a string 32 times in kubectl's go-template: 32 GiB.
// In the server it ran the class's kubelab out of memory.
const templateBomb = `kubectl get ns -o go-template='{{$s := "aaaaaaaa"}}{{range 32}}{{$s = printf "%s%s" $s $s}}{{end}}{{len $s}}'`

// TestHostileProcessesTemplateBomb: the command ends at its memory limit,
// with a word on why; the server's heap does not hold it, and another
// student's command runs.
func TestHostileProcessesTemplateBomb(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's runtime needs more address space than a command's limit allows")
	}
	lab := startTerminal(t, processes)
	attacker, other := open(t, lab, nil), open(t, lab, nil)
	runtime.GC()
	before := heapBytes()
	start := time.Now()
	r := attacker.run(templateBomb, "")
	took := time.Since(start)
	runtime.GC()
	grown := int64(heapBytes()) - int64(before)
	t.Logf("the bomb ended after %v, code %d; the server's heap %+.1f MiB", took.Round(time.Millisecond), r.Code, float64(grown)/(1<<20))
	if r.Code == 0 || !strings.Contains(r.Err, "needed more than 256 MiB of memory") {
		t.Errorf("the bomb: %+v", r)
	}
	if grown > 64<<20 {
		t.Errorf("the server's heap grew by %d MiB", grown>>20)
	}
	if r := other.run("kubectl get pods -o name", ""); r.Code != 0 || !strings.Contains(r.Out, "pod/ssa-demo") {
		t.Errorf("another student's command after the bomb: %+v", r)
	}
	if kids := commandProcesses(t); len(kids) != 0 {
		t.Errorf("command processes left: %v", kids)
	}
}

// loop keeps a processor busy in kubectl's go-template, printing nothing.
const loop = `kubectl get ns -o go-template='{{range 1000000}}{{range 1000000}}{{end}}{{end}}'`

// TestHostileProcessesCtrlCEndsALoop: Ctrl-C ends a command busy in a
// template at once, process and all. In the server, the same loop kept
// a core busy for about 40 s after Ctrl-C.
func TestHostileProcessesCtrlCEndsALoop(t *testing.T) {
	lab := startTerminal(t, processes)
	tm := open(t, lab, nil)
	tm.send(map[string]any{"t": "run", "line": loop})
	eventually.Holds(t, "the loop's process running", func() (bool, error) { return len(commandProcesses(t)) == 1, nil })
	start := time.Now()
	tm.send(map[string]any{"t": "int"})
	r := tm.wait(30 * time.Second)
	ended := time.Since(start)
	eventually.Holds(t, "the loop's process gone", func() (bool, error) { return len(commandProcesses(t)) == 0, nil })
	gone := time.Since(start)
	t.Logf("Ctrl-C: the command ended after %v, its process was gone after %v", ended.Round(time.Millisecond), gone.Round(time.Millisecond))
	if r.Code != 130 {
		t.Errorf("after Ctrl-C: %+v", r)
	}
	if gone > 2*time.Second {
		t.Errorf("the process was gone %v after Ctrl-C, want within 2 s", gone)
	}
}

// TestHostileProcessesCPUCap: a loop that nobody stops ends at the CPU
// limit, with a word on why.
func TestHostileProcessesCPUCap(t *testing.T) {
	lab := startTerminal(t, processes, func(c *terminal.Config) {
		c.Limits = terminal.DefaultLimits
		c.Limits.CPU = 2 * time.Second
	})
	tm := open(t, lab, nil)
	if r := tm.run(loop, ""); r.Code == 0 || !strings.Contains(r.Err, "more than 2s of processor time") {
		t.Errorf("the loop: %+v", r)
	}
}

// TestHostileProcessesOwnStdin: each command reads its own stdin box. In
// the server, one process-wide stdin was lent to one command at a time,
// so one student's watch on `-f -` left another's apply hanging.
func TestHostileProcessesOwnStdin(t *testing.T) {
	t.Parallel()
	lab := startTerminal(t, processes)
	alice, bob := open(t, lab, nil), open(t, lab, nil)
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa-demo\n  namespace: internals-demo\n"
	alice.send(map[string]any{"t": "run", "line": "kubectl get -f - -w", "stdin": pod})
	alice.until("ssa-demo", 30*time.Second)
	yaml := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bobs\n"
	if r := bob.run("kubectl apply -f -", yaml); r.Code != 0 || !strings.Contains(r.Out, "configmap/bobs created") {
		t.Errorf("bob's apply while alice's watch reads its stdin: %+v", r)
	}
}

// commandProcesses lists the terminal's command processes this test
// binary has running: its children marked as commands.
func commandProcesses(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != self {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(environ, []byte("KUBELAB_TERMINAL_COMMAND=1")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestProcessesLeaveNothingInTheServer: in the server, every kubectl
// command leaves its command tree behind (cobra keeps each flag's
// completion function in a process-wide map); in a child process it
// leaves nothing in the server. The figures for both are logged, the
// child's is bounded.
func TestProcessesLeaveNothingInTheServer(t *testing.T) {
	const commands = 40
	held := func(options ...func(*terminal.Config)) int64 {
		tm := open(t, startTerminal(t, options...), nil)
		tm.run("kubectl get pods -o name", "") // the first pays for what every command shares
		runtime.GC()
		before := heapBytes()
		for range commands {
			if r := tm.run("kubectl get pods -o name", ""); r.Code != 0 {
				t.Fatalf("%+v", r)
			}
		}
		runtime.GC()
		return int64(heapBytes()) - int64(before)
	}
	inServer, inChild := held(), held(processes)
	t.Logf("%d commands: the server's heap held %+.1f MiB after them run in the server, %+.1f MiB run in processes",
		commands, float64(inServer)/(1<<20), float64(inChild)/(1<<20))
	if inChild > 8<<20 {
		t.Errorf("%d commands in processes left %d MiB in the server's heap", commands, inChild>>20)
	}
}
