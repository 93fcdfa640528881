package terminal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
// as kubelab runs them. Each attack runs again as soon as it ends, so that
// it is under way for the whole measurement. It reports the classmate's
// median and p99 latency, from the line sent to its exit, the most the
// server's RSS grew over its level before the attack, and how long the
// attacker's command took to end after Ctrl-C. "none" is the baseline, in
// the same run.
//
//	go test -run XXX -bench AnotherStudentDuringAttacks -benchtime 40x ./server/terminal/
func BenchmarkAnotherStudentDuringAttacks(b *testing.B) {
	for _, attack := range []struct{ name, line string }{
		{name: "none"},
		// Memory: doubles a string 32 times, to the command's 256 MiB.
		{name: "template-bomb", line: templateBomb},
		// CPU: a template that ranges a million times a million.
		{name: "template-loop", line: `kubectl get ns -o go-template='{{range 1000000}}{{range 1000000}}{{end}}{{end}}'`},
		// Processes: kubectl after kubectl, in the background, without end.
		{name: "kubectl-fork-loop", line: "while :; do kubectl get pods & done"},
		// Output: as `yes | head -c 10G` would, to the 1 MiB output cap.
		{name: "output-flood", line: "while :; do echo yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done | head -c 10G"},
		// Input: a heredoc of 100 MB, past what a message may carry.
		{name: "heredoc-100MB", line: "cat <<'EOF' | wc -c\n" + strings.Repeat("x", 100<<20) + "\nEOF"},
	} {
		b.Run(attack.name, func(b *testing.B) {
			lab := startTerminal(b, processes)
			attacker, other := open(b, lab, nil), open(b, lab, nil)
			// The classmate's first command, before the attack: discovery
			// and the first list are not what is measured.
			other.run("kubectl get pods", "")
			before := serverRSS()
			if before <= 0 {
				b.Fatal("no VmRSS in /proc/self/status")
			}
			var peak atomic.Int64
			peak.Store(before)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
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
			// The attacker runs the line again each time it ends, until
			// Ctrl-C: sent under mu, after which no run starts, so that
			// Ctrl-C always finds the last run (the server reads a
			// session's messages in order).
			var mu sync.Mutex
			stopped := false
			attacking, attackerDone := make(chan struct{}), make(chan struct{})
			var endedAtCtrlC atomic.Bool
			go func() {
				defer close(attackerDone)
				if attack.line == "" {
					close(attacking)
					return
				}
				for first := true; ; first = false {
					mu.Lock()
					if stopped {
						mu.Unlock()
						endedAtCtrlC.Store(true)
						return
					}
					err := attacker.sendRun(attack.line)
					mu.Unlock()
					if first {
						close(attacking)
					}
					if err == nil {
						err = attacker.waitExit()
					}
					if err != nil {
						return // the server closed the attacker's websocket
					}
				}
			}()
			<-attacking
			latencies := classmate(b, other)
			began := time.Now()
			mu.Lock()
			stopped = true
			_ = attacker.sendInterrupt()
			mu.Unlock()
			<-attackerDone
			ctrlC := time.Since(began)
			close(stop)
			wg.Wait()
			reportLatencies(b, latencies)
			b.ReportMetric(float64(peak.Load()-before)/(1<<20), "server-RSS-grown-MiB")
			if endedAtCtrlC.Load() {
				// Not for an attack the server ended by closing the
				// attacker's websocket (the heredoc).
				b.ReportMetric(float64(ctrlC)/float64(time.Millisecond), "attack-ended-after-ctrl-c-ms")
			}
		})
	}
}

// BenchmarkClassWatching: 63 terminals each watch their pods (`kubectl get
// pods -w`), each in a process of its own: with a classmate's command, the
// most the server runs at once (Limits.Total, 64). Meanwhile the classmate
// runs `kubectl get pods`. It reports the classmate's median and p99, the
// server's RSS growth, and the memory the watches' processes hold: their
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
			before := serverRSS()
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
			grown := serverRSS() - before
			for _, w := range watchers {
				w.send(map[string]any{"t": "int"})
			}
			for _, w := range watchers {
				w.wait(time.Minute)
			}
			reportLatencies(b, latencies)
			b.ReportMetric(float64(grown)/(1<<20), "server-RSS-grown-MiB")
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

// sendRun, sendInterrupt and waitExit are for a benchmark's goroutine,
// and for a websocket the server may have closed: they return errors
// rather than end the benchmark.
func (tm *term) sendRun(line string) error {
	b, _ := json.Marshal(map[string]any{"t": "run", "line": line})
	return tm.conn.Write(context.Background(), websocket.MessageText, b)
}

func (tm *term) sendInterrupt() error {
	return tm.conn.Write(context.Background(), websocket.MessageText, []byte(`{"t":"int"}`))
}

func (tm *term) waitExit() error {
	for {
		_, b, err := tm.conn.Read(context.Background())
		if err != nil {
			return err
		}
		var m msg
		if json.Unmarshal(b, &m) == nil && m.T == "exit" {
			return nil
		}
	}
}
