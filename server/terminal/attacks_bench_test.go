package terminal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/server/terminal"
)

// BenchmarkAnotherStudentDuringAttacks: while one terminal attacks, another
// runs `kubectl get pods`, as a classmate would, in processes of their own
// as kubelab runs them. The attacker is a process of its own too (this
// binary again, see attackerMain), so that what it holds on its side (the
// heredoc's 100 MB, the output it reads) is not counted as the server's.
// Each attack runs again as soon as it ends, so that it is under way for
// the whole measurement. It reports the classmate's median and p99
// latency, from the line sent to its exit, the most the server's RSS grew
// over its settled level before the attack, and how long the attacker's
// command took to end after Ctrl-C. "none" is the baseline, in the same
// run.
//
//	go test -run XXX -bench AnotherStudentDuringAttacks -benchtime 40x ./server/terminal/
func BenchmarkAnotherStudentDuringAttacks(b *testing.B) {
	for _, name := range append([]string{"none"}, slices.Sorted(maps.Keys(attacks))...) {
		b.Run(name, func(b *testing.B) {
			lab := startTerminal(b, processes)
			other := open(b, lab, nil)
			// The classmate's first command, before the attack: discovery
			// and the first list are not what is measured.
			other.run("kubectl get pods", "")
			before := settledRSS()
			if before <= 0 {
				b.Fatal("no VmRSS in /proc/self/status")
			}
			var peak atomic.Int64
			peak.Store(before)
			stop, sampled := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					if rss := serverRSS(); rss > peak.Load() {
						peak.Store(rss)
					}
				}
			}()
			var attacker *exec.Cmd
			var toAttacker io.WriteCloser
			var fromAttacker *bufio.Reader
			if name != "none" {
				attacker = exec.Command(os.Args[0], "-test.run=^$")
				attacker.Env = append(os.Environ(), attackerEnv+"="+name, attackerURLEnv+"="+lab.URL())
				attacker.Stderr = os.Stderr
				toAttacker, _ = attacker.StdinPipe()
				out, _ := attacker.StdoutPipe()
				fromAttacker = bufio.NewReader(out)
				if err := attacker.Start(); err != nil {
					b.Fatal(err)
				}
				if said, err := fromAttacker.ReadString('\n'); said != "attacking\n" {
					b.Fatalf("the attacker said %q (%v)", said, err)
				}
			}
			latencies := classmate(b, other)
			var ctrlC time.Duration
			endedAtCtrlC := false
			if attacker != nil {
				began := time.Now()
				_, _ = io.WriteString(toAttacker, "ctrl-c\n")
				said, _ := io.ReadAll(fromAttacker)
				if err := attacker.Wait(); err != nil {
					b.Fatalf("the attacker: %v", err)
				}
				ctrlC = time.Since(began)
				// Not for an attack that the server ended by closing the
				// attacker's websocket (the heredoc).
				endedAtCtrlC = string(said) == "ended at ctrl-c\n"
			}
			close(stop)
			<-sampled
			reportLatencies(b, latencies)
			b.ReportMetric(float64(peak.Load()-before)/(1<<20), "server-RSS-grown-MiB")
			if endedAtCtrlC {
				b.ReportMetric(float64(ctrlC)/float64(time.Millisecond), "attack-ended-after-ctrl-c-ms")
			}
		})
	}
}

// attacks make the lines of BenchmarkAnotherStudentDuringAttacks's
// attacker, by name: made when an attacker runs, not at every start of
// this binary (the terminal's commands are this binary too).
var attacks = map[string]func() string{
	// Memory: doubles a string 32 times, to the command's 256 MiB.
	"template-bomb": func() string { return templateBomb },
	// CPU: a template that ranges a million times a million.
	"template-loop": func() string {
		return `kubectl get ns -o go-template='{{range 1000000}}{{range 1000000}}{{end}}{{end}}'`
	},
	// Processes: kubectl after kubectl, in the background, without end.
	"kubectl-fork-loop": func() string { return "while :; do kubectl get pods & done" },
	// Output: as `yes | head -c 10G` would, to the 1 MiB output cap.
	"output-flood": func() string { return "while :; do echo yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done | head -c 10G" },
	// Input: a heredoc of 100 MB, past what a message may carry.
	"heredoc-100MB": func() string { return "cat <<'EOF' | wc -c\n" + strings.Repeat("x", 100<<20) + "\nEOF" },
}

// The attacker's process: this binary, with the attack's name and the
// lab's URL in its environment.
const (
	attackerEnv    = "KUBELAB_BENCH_ATTACK"
	attackerURLEnv = "KUBELAB_BENCH_URL"
)

// attackerMain runs an attack's line in a terminal of the lab, again each
// time it ends, until a line on stdin says Ctrl-C: that is sent under mu,
// after which no run starts, so that it always finds the last run (the
// server reads a session's messages in order). It says "attacking" once
// the first run is sent, then how the attack ended.
func attackerMain(name, url string) int {
	ctx := context.Background()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ui/ws/terminal",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {url}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "the attacker's terminal:", err)
		return 1
	}
	conn.SetReadLimit(4 << 20)
	line, ok := attacks[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "no attack named", name)
		return 1
	}
	run, _ := json.Marshal(map[string]any{"t": "run", "line": line()})
	var mu sync.Mutex
	stopped := false
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		_ = conn.Write(ctx, websocket.MessageText, []byte(`{"t":"int"}`))
	}()
	for first := true; ; first = false {
		mu.Lock()
		if stopped {
			mu.Unlock()
			fmt.Println("ended at ctrl-c")
			return 0
		}
		err := conn.Write(ctx, websocket.MessageText, run)
		mu.Unlock()
		if first {
			fmt.Println("attacking")
		}
		for err == nil {
			var b []byte
			if _, b, err = conn.Read(ctx); err == nil && strings.Contains(string(b), `"t":"exit"`) {
				break
			}
		}
		if err != nil {
			fmt.Println("the server closed the websocket")
			return 0
		}
	}
}

// BenchmarkClassWatching: 63 terminals each watch their pods (`kubectl get
// pods -w`), each in a process of its own: with a classmate's command, the
// most the server runs at once (Limits.Total, 64). Meanwhile the classmate
// runs `kubectl get pods`. It reports the classmate's median and p99, the
// RSS the server holds more, and the memory the watches' processes hold: their
// PSS, in which the pages they share (kubelab's binary) count once, not in
// each. No watch is the baseline, in the same run.
//
//	go test -run XXX -bench ClassWatching -benchtime 40x ./server/terminal/
func BenchmarkClassWatching(b *testing.B) {
	for _, watches := range []int{0, 63} {
		b.Run(fmt.Sprintf("watches=%d", watches), func(b *testing.B) {
			// One local user has every terminal here: the cap per user is
			// the class's.
			limits := terminal.DefaultLimits
			limits.Commands = limits.Total
			lab := startTerminal(b, processes, func(c *terminal.Config) { c.Limits = limits })
			other := open(b, lab, nil)
			other.run("kubectl get pods", "")
			before := settledRSS()
			watchers := make([]*term, watches)
			for i := range watchers {
				watchers[i] = open(b, lab, nil)
				watchers[i].send(map[string]any{"t": "run", "line": "kubectl get pods -w"})
			}
			for _, w := range watchers {
				w.until("ssa-demo", 5*time.Minute)
			}
			var commands int64
			pids := commandProcesses(b)
			for _, pid := range pids {
				commands += processPSS(pid)
			}
			latencies := classmate(b, other)
			held := settledRSS() - before
			for _, w := range watchers {
				w.send(map[string]any{"t": "int"})
			}
			for _, w := range watchers {
				w.wait(time.Minute)
			}
			reportLatencies(b, latencies)
			b.ReportMetric(float64(held)/(1<<20), "server-RSS-held-MiB")
			b.ReportMetric(float64(len(pids)), "command-processes")
			b.ReportMetric(float64(commands)/(1<<20), "commands-PSS-MiB")
		})
	}
}

// classmate runs `kubectl get pods` b.N times in tm, timed, and returns
// how long each took, from the line sent to its exit.
func classmate(b *testing.B, tm *term) []time.Duration {
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		began := time.Now()
		if r := tm.run("kubectl get pods", ""); r.Code != 0 {
			b.Fatalf("the classmate's kubectl get pods: %+v", r)
		}
		latencies = append(latencies, time.Since(began))
	}
	b.StopTimer()
	return latencies
}

func reportLatencies(b *testing.B, latencies []time.Duration) {
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(latencies[len(latencies)/2]), "classmate-p50-ms")
	b.ReportMetric(ms(latencies[(len(latencies)*99+99)/100-1]), "classmate-p99-ms")
}

// processPSS is pid's proportional set size, or 0 if it cannot be read.
func processPSS(pid int) int64 {
	return kiBOf(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}

// settledRSS is serverRSS once the garbage of what ran before is
// collected and returned to the system.
func settledRSS() int64 {
	debug.FreeOSMemory()
	return serverRSS()
}

// serverRSS is this process's resident memory, the server's (not its
// commands' processes), or 0 if it cannot be read.
func serverRSS() int64 { return kiBOf("/proc/self/status", "VmRSS:") }

// kiBOf reads a figure in kB off a /proc file, in bytes.
func kiBOf(file, field string) int64 {
	status, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
