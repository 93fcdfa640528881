package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server/labhttp"
)

// reader is who runs the commands: their terminal (a kubeconfig, tools on
// PATH) and their browser (the lesson's pages, the labs' JSON API).
type reader struct {
	t   *testing.T
	lab *kubelabtest.Lab
	// ns is the namespace the pages show the commands in.
	ns string
	// token is the student's session in a class. In local mode there is
	// none: kubectl sends no token over plain HTTP, so the reader's
	// terminal and browser are both the anonymous local user.
	token string
	// student is set in classroom mode: no etcd access from the terminal.
	student bool
	// inPage runs the commands in the page's own terminal, over its
	// websocket, as the reader's browser; otherwise bash runs them, with
	// the real kubectl and etcdctl, as in a terminal of the reader's own.
	inPage bool
	env    []string
}

// in is the same reader in a subtest.
func (r *reader) in(t *testing.T) *reader {
	c := *r
	c.t = t
	return &c
}

// commandTimeout bounds any one command; a long-running one is ended
// sooner, by its expectation's timeout. The longest by design is the gone
// lab's window: a 76 s sleep, then 121 kubectl runs, which took half a
// second each on two cores busy with the rest of the suite (about 140 s
// in all; 90 s cut it off after 28 runs), and 1.6 s each on two cores
// loaded three times as much (3 minutes cut it off after 111 runs).
const commandTimeout = 6 * time.Minute

// terminal makes the reader's shell: kubectl and etcdctl on PATH, the
// kubeconfig, and etcdctl's endpoint. kubectl is a small wrapper that runs
// the real one under timeout(1) when KUBELAB_TEST_TIMEOUT is set, so that a
// watch ends by itself and a pipe after it (`| grep`) sees the end of its
// input and prints what it found, as when a student presses Ctrl-C.
func (r *reader) terminal(kubeconfig string) {
	r.t.Helper()
	for _, tool := range []string{"bash", "jq", "timeout", "od", "head", "grep", "seq", "sleep", "date"} {
		if _, err := exec.LookPath(tool); err != nil {
			r.t.Fatalf("the lesson's commands need %s: %v", tool, err)
		}
	}
	bin := r.t.TempDir()
	wrapper := "#!/bin/sh\nif [ -n \"$KUBELAB_TEST_TIMEOUT\" ]; then exec timeout \"$KUBELAB_TEST_TIMEOUT\" " +
		clitest.Kubectl(r.t) + " \"$@\"; fi\nexec " + clitest.Kubectl(r.t) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(wrapper), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(clitest.Etcdctl(r.t), filepath.Join(bin, "etcdctl")); err != nil {
		r.t.Fatal(err)
	}
	r.env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig, "HOME="+r.t.TempDir(), "LC_ALL=C")
}

// result is what one command did.
type result struct {
	out  string // stdout and stderr, as a terminal shows them
	code int    // exit status
	took time.Duration
	// interruptedInPage is set for a command that the page's terminal
	// ended at Ctrl-C: its status is then the terminal's 130, as a
	// shell's for a command ended by SIGINT, whatever the command's own
	// would have been.
	interruptedInPage bool
}

// running is a command started in the background.
type running struct {
	out  *terminalOutput
	done chan result
	// interrupt is Ctrl-C.
	interrupt func()
}

// terminalOutput is what a command has printed so far, read while it
// runs as a student reads their terminal.
type terminalOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *terminalOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *terminalOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// awaitPrinted waits until the command has printed a match for each of
// patterns, has ended, or within has passed: a student presses Ctrl-C on
// a watch once they have seen the events the lab asked for, and those
// reach the terminal after the command that caused them has returned.
func (r *running) awaitPrinted(patterns []*regexp.Regexp, within time.Duration) {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(r.done) > 0 {
			return
		}
		out, all := r.out.String(), true
		for _, re := range patterns {
			all = all && re.MatchString(out)
		}
		if all {
			return
		}
	}
}

// start runs line in the reader's terminal; timeout, when not zero, ends
// a command that is still running after that long, as a student's Ctrl-C
// does.
func (r *reader) start(line string, timeout time.Duration) *running {
	r.t.Helper()
	if r.inPage {
		return r.startInPage(line, timeout)
	}
	return r.startInBash(line, timeout)
}

// startInBash runs line with bash -c; timeout ends kubectl (through the
// wrapper) under timeout(1).
func (r *reader) startInBash(line string, timeout time.Duration) *running {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	cmd := exec.CommandContext(ctx, "bash", "-c", r.rewrite(line))
	cmd.Env = r.env
	if !strings.Contains(line, "--endpoints=") {
		// etcdctl's default endpoint is 127.0.0.1:2379, kubelab's in
		// local mode; the test's etcd listens on a free port instead
		// (etcdctl refuses the variable beside the flag).
		cmd.Env = append(cmd.Env, "ETCDCTL_ENDPOINTS="+r.lab.EtcdURL)
	}
	if timeout > 0 {
		cmd.Env = append(cmd.Env, "KUBELAB_TEST_TIMEOUT="+strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)+"s")
	}
	buf := &terminalOutput{}
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A command that outlives commandTimeout is stopped with everything
	// it started, and fails its expectation.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	began := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		r.t.Fatalf("bash -c %q: %v", line, err)
	}
	// Ctrl-C in a terminal sends SIGINT to the command and all it started.
	pid := cmd.Process.Pid
	run := &running{out: buf, done: make(chan result, 1), interrupt: func() { syscall.Kill(-pid, syscall.SIGINT) }}
	go func() {
		defer cancel()
		err := cmd.Wait()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			code = -1
		}
		run.done <- result{out: buf.String(), code: code, took: time.Since(began)}
	}()
	return run
}

func (r *running) wait() result { return <-r.done }

// startInPage runs line in the page's terminal, over its websocket as the
// page speaks it, in a tab of its own, so that a lab's watch runs in one
// tab while its next commands go in others. Its stdout and stderr are
// what the terminal shows.
func (r *reader) startInPage(line string, timeout time.Duration) *running {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	header := http.Header{"Origin": {r.lab.URL()}}
	if r.student {
		header.Set("Cookie", authn.SessionCookie+"="+r.token)
	}
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.lab.URL(), "http")+"/ui/ws/terminal", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		cancel()
		r.t.Fatalf("the page's terminal: %v", err)
	}
	// A frame holds what one write of the command wrote: kubectl -v=9
	// writes a whole response body at once.
	conn.SetReadLimit(4 << 20)
	send := func(m map[string]string) error {
		b, _ := json.Marshal(m)
		return conn.Write(ctx, websocket.MessageText, b)
	}
	if err := send(map[string]string{"t": "run", "line": r.rewrite(line)}); err != nil {
		cancel()
		r.t.Fatalf("sending %q to the page's terminal: %v", line, err)
	}
	buf := &terminalOutput{}
	var interrupted atomic.Bool
	run := &running{out: buf, done: make(chan result, 1), interrupt: func() {
		interrupted.Store(true)
		_ = send(map[string]string{"t": "int"})
	}}
	began := time.Now()
	go func() {
		defer cancel()
		defer conn.CloseNow()
		if timeout > 0 {
			defer time.AfterFunc(timeout, run.interrupt).Stop()
		}
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				fmt.Fprintf(buf, "\n[the terminal's websocket: %v]\n", err)
				run.done <- result{out: buf.String(), code: -1, took: time.Since(began)}
				return
			}
			var m struct {
				T    string `json:"t"`
				D    string `json:"d"`
				Code *int   `json:"code"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				fmt.Fprintf(buf, "\n[the terminal sent %q]\n", b)
				continue
			}
			switch {
			case m.T == "o" || m.T == "e":
				buf.Write([]byte(m.D))
			case m.T == "exit" && m.Code != nil:
				run.done <- result{out: buf.String(), code: *m.Code, took: time.Since(began), interruptedInPage: interrupted.Load()}
				return
			}
		}
	}()
	return run
}

// do sends a request to kubelab as the reader's browser: the session
// cookie in a class, the admin's token in local mode.
func (r *reader) do(method, path, body string, header ...string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.lab.URL()+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.student {
		req.Header.Set("Cookie", authn.SessionCookie+"="+r.token)
		req.Header.Set("Origin", r.lab.URL())
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// labView reads one lab through the labs' JSON API, as the lab's page does.
func (r *reader) labView(id, method, suffix, body string) labhttp.LabView {
	r.t.Helper()
	code, out := r.do(method, labhttp.APIPath+"/"+id+suffix, body)
	if code != http.StatusOK {
		r.t.Fatalf("%s lab %s%s: HTTP %d: %s", method, id, suffix, code, out)
	}
	var v labhttp.LabView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		r.t.Fatalf("lab %s: %v: %s", id, err, out)
	}
	return v
}

func step(v labhttp.LabView, id string) labhttp.StepView {
	for _, s := range v.Steps {
		if s.ID == id {
			return s
		}
	}
	return labhttp.StepView{}
}

// waitPassed asks for the lab's checks until the step passes.
func (r *reader) waitPassed(labID, stepID string) labhttp.StepView {
	r.t.Helper()
	var last labhttp.StepView
	began := time.Now()
	eventually.Holds(r.t, labID+"/"+stepID+" passing", func() (bool, error) {
		v := r.labView(labID, "POST", "/check", "")
		last = step(v, stepID)
		if last.State != labhttp.StatePassed && time.Since(began) > 15*time.Second {
			r.t.Logf("still waiting: %+v", v)
		}
		return last.State == labhttp.StatePassed, nil
	})
	return last
}
