package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubelab/kubelab/web/i18n"
)

// With Config.Processes, each kubectl command runs in a child process of
// kubelab's own binary rather than in the server: a go-template that
// doubles a string 32 times, or ranges a million times, then exhausts the
// child's memory or CPU limit and ends, not the class's server; the child
// has its own stdin (the stdin box), and kubectl's signal handlers are
// its own. Its requests still reach kubelab's router as the student: the
// child dials a Unix socket of its command only, in a directory only
// kubelab's user may enter, and the server behind it adds the browser's
// credentials exactly as the in-process transport does.

// childEnv marks a process started as a terminal command; its spec comes
// on file descriptor 3 (a command line may be longer than an environment
// variable may hold).
const childEnv = "KUBELAB_TERMINAL_COMMAND"

// childSpec is what a child needs to run one command: a shell's Line in
// the session's Scratch directory, or kubectl's Args (a Tab's completion).
type childSpec struct {
	Line    string   `json:"line,omitempty"`
	Scratch string   `json:"scratch,omitempty"`
	Args    []string `json:"args,omitempty"` // without "kubectl"
	Socket  string   `json:"socket"`
	Server  string   `json:"server,omitempty"`
	// EtcdSocket is where the line's etcdctl asks the server to read etcd,
	// in local mode only.
	EtcdSocket string `json:"etcdSocket,omitempty"`
	Namespace  string `json:"namespace"`
	Lang       string `json:"lang"`
	// Memory bounds the heap the command may add to the process as it
	// started (RLIMIT_AS over its size then); CPUSeconds its processor
	// time (RLIMIT_CPU).
	Memory     int64 `json:"memory"`
	CPUSeconds int   `json:"cpuSeconds"`
}

// childHook says that this binary can run a terminal command in a child
// of itself: its main called RunCommandIfAsked.
var childHook atomic.Bool

// RunCommandIfAsked runs a terminal command and exits if this process was
// started as one; otherwise it returns at once. kubelab's main calls it
// first, as does the main of a test binary that starts the terminal
// with Processes. A binary that has not called it runs even a watch in
// the server (in tests without that main; see session.run).
func RunCommandIfAsked() {
	if os.Getenv(childEnv) != "1" {
		childHook.Store(true)
		return
	}
	os.Exit(childMain())
}

func childMain() int {
	// A runtime that runs out of memory says so in one line, without
	// every goroutine's stack.
	debug.SetTraceback("none")
	var spec childSpec
	lifeline := os.NewFile(3, "spec")
	if err := json.NewDecoder(lifeline).Decode(&spec); err != nil {
		fmt.Fprintf(os.Stderr, "kubelab: the command's spec: %v\n", err)
		return 1
	}
	// The server holds the spec's pipe open while the command may run: its
	// end, even the server's crash, ends the command.
	go func() {
		_, _ = io.Copy(io.Discard, lifeline)
		os.Exit(1)
	}()
	cpuCap := time.Duration(spec.CPUSeconds) * time.Second
	sayOverCPU(i18n.Lang(spec.Lang), cpuCap)
	if err := setThreadStacks(commandThreadStack); err != nil {
		fmt.Fprintf(os.Stderr, "kubelab: the command's threads: %v\n", err)
		return 1
	}
	if err := limitSelf(spec.Memory, spec.CPUSeconds, maxScratchFile); err != nil {
		fmt.Fprintf(os.Stderr, "kubelab: the command's limits: %v\n", err)
		return 1
	}
	// Each blocked system call holds a thread, which the server's user
	// and container count too: a line may not make many.
	debug.SetMaxThreads(maxThreads)
	// The collector works harder as the heap nears the limit, so that a
	// command with a large but bounded answer finishes.
	debug.SetMemoryLimit(spec.Memory * 3 / 4)
	id := identity{toSocket: plainHTTP{unixTransport(spec.Socket)}, server: spec.Server, namespace: spec.Namespace}
	if spec.EtcdSocket != "" {
		id.toEtcd = unixTransport(spec.EtcdSocket)
	}
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	lang := i18n.Lang(spec.Lang)
	if spec.Line != "" {
		return runShell(context.Background(), id, lang, spec.Scratch, spec.Line, streams)
	}
	return runKubectl(context.Background(), id, spec.Args, os.Stdin, streams, func(r *refusal) {
		fmt.Fprintln(os.Stderr, say(lang, r))
	})
}

// commandEnvironment is a command's whole environment, with home as its
// HOME. Nothing of the server's: no PATH (kubectl runs no program), no
// KUBECONFIG. One malloc arena: glibc gives each thread that mallocs an
// arena of its own, 64 MiB of address space, up to 8 for each core,
// which the command's RLIMIT_AS would count as its memory; the C that a
// command runs (the runtime starting a thread) needs no more than one.
func commandEnvironment(home string) []string {
	return []string{"HOME=" + home, "PATH=/nonexistent", "GOTRACEBACK=none", "MALLOC_ARENA_MAX=1"}
}

// commandThreadStack is the stack of each thread a command's process
// starts once it runs (setThreadStacks): the Go runtime's own threads
// need little (without cgo it gives them 16 KiB), and 200 of them then
// take 50 MiB of address space at most, not 1.6 GiB.
const commandThreadStack = 256 << 10

// maxScratchFile is the largest file a command may write in the scratch
// directory (RLIMIT_FSIZE: a write past it fails); maxFiles bounds its
// open descriptors (RLIMIT_NOFILE: each pipe's buffer is kernel memory
// that RLIMIT_AS does not count) and maxThreads its threads.
const (
	maxScratchFile = 16 << 20
	maxFiles       = 256
	maxThreads     = 200
)

// sayOverCPU makes the process end, saying why, when the kernel signals
// SIGXCPU: its processor time has reached the soft limit. The server
// cannot tell this afterwards from the time the process used: the kernel
// counts that limit in scheduler ticks, and wait4 reports the exact
// time, which on a busy machine was below nine tenths of the limit.
func sayOverCPU(lang i18n.Lang, limit time.Duration) {
	over := make(chan os.Signal, 1)
	signal.Notify(over, syscall.SIGXCPU)
	go func() {
		<-over
		fmt.Fprintln(os.Stderr, say(lang, refuse("cap.cpu", limit.String())))
		os.Exit(cpuCapExit)
	}()
}

// cpuCapExit is the status of a command stopped at its CPU limit, as a
// shell reports a command killed by SIGKILL.
const cpuCapExit = 137

// limitSelf bounds the process's address space to what it maps now plus
// memory, its processor time to cpuSeconds and the files it writes to
// fileBytes: past the first, an allocation fails and the runtime ends the
// process; at the second, the kernel sends SIGXCPU (sayOverCPU), and a
// second later SIGKILL; past the third, a write fails (Go ignores
// SIGXFSZ).
func limitSelf(memory int64, cpuSeconds int, fileBytes uint64) error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var mapped int64
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return fmt.Errorf("VmSize %q: %v", v, err)
			}
			mapped = kb << 10
		}
	}
	if mapped == 0 {
		return errors.New("no VmSize in /proc/self/status")
	}
	as := uint64(mapped + memory)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return err
	}
	cpu := uint64(cpuSeconds)
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu + 1}); err != nil {
		return err
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: fileBytes, Max: fileBytes}); err != nil {
		return err
	}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: maxFiles, Max: maxFiles})
}

var (
	errMemoryCap = errors.New("the command used too much memory")
	errCPUCap    = errors.New("the command used too much processor time")
)

// runChild runs spec in a child process as id, with streams.In as its
// standard input, and returns its exit status. It ends the child, and
// everything it started, when ctx ends. A child that met its memory or
// CPU limit ends with cause set to errMemoryCap or errCPUCap.
func runChild(ctx context.Context, id identity, lang i18n.Lang, limits Limits, spec childSpec, streams genericiooptions.IOStreams) (code int, cause error) {
	self, err := os.Executable()
	if err != nil {
		return childFailed(streams, err)
	}
	dir, err := os.MkdirTemp("", "kubelab-command-")
	if err != nil {
		return childFailed(streams, err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return childFailed(streams, err)
	}
	api := &http.Server{Handler: id.from.serving(id.router), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go api.Serve(ln)
	defer api.Close()
	if id.etcd != nil {
		spec.EtcdSocket = filepath.Join(dir, "etcd.sock")
		ln, err := net.Listen("unix", spec.EtcdSocket)
		if err != nil {
			return childFailed(streams, err)
		}
		etcd := &http.Server{Handler: serveEtcdctl(id.etcd, lang), ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return ctx }}
		go etcd.Serve(ln)
		defer etcd.Close()
	}

	specR, specW, err := os.Pipe()
	if err != nil {
		return childFailed(streams, err)
	}
	defer specR.Close()
	spec.Socket, spec.Server, spec.Namespace, spec.Lang = socket, id.server, id.namespace, string(lang)
	spec.Memory, spec.CPUSeconds = limits.Memory, max(int(limits.CPU/time.Second), 1)
	encoded, _ := json.Marshal(spec)
	// The spec's pipe is also the child's lifeline (see childMain): its
	// write end stays open until the command has ended. (Pdeathsig would
	// kill the child whenever the thread that started it ends, which the
	// Go runtime does not promise never to do.)
	defer specW.Close()
	go specW.Write(encoded)

	cmd := exec.Command(self)
	cmd.Env = append([]string{childEnv + "=1"}, commandEnvironment(dir)...)
	cmd.Dir = dir
	cmd.Stdin = streams.In
	stderr := &childStderr{w: streams.ErrOut}
	cmd.Stdout, cmd.Stderr = streams.Out, stderr
	cmd.ExtraFiles = []*os.File{specR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return childFailed(streams, err)
	}
	specR.Close()
	// Ctrl-C, the time cap, the output cap and a closed page end ctx: the
	// child and whatever it started are killed at once.
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	err = cmd.Wait()
	stderr.flush()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case !errors.As(err, &exit):
		return childFailed(streams, err)
	}
	if ctx.Err() != nil {
		return 1, nil // the caller knows why
	}
	ws, _ := exit.Sys().(syscall.WaitStatus)
	fatal := stderr.fatalError()
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && exit.UserTime()+exit.SystemTime() >= limits.CPU:
		// A child that did not end at SIGXCPU: the kernel kills it at
		// the hard limit, a second of its time later. A SIGKILL from
		// elsewhere (the OOM killer) is not the student's to be told.
		return cpuCapExit, errCPUCap
	case strings.Contains(fatal, "out of memory"):
		return 137, errMemoryCap
	case fatal != "" && id.logger != nil:
		// Not the student's doing: a bug of kubectl's, or kubelab's.
		// Bounded: a line can print a "fatal error:" of its own.
		id.logger.Error("a terminal command's process failed", "line", clip(spec.Line), "error", clip(fatal))
	}
	return exit.ExitCode(), nil
}

func childFailed(streams genericiooptions.IOStreams, err error) (int, error) {
	fmt.Fprintf(streams.ErrOut, "error: kubelab could not run the command: %v\n", err)
	return 1, nil
}

// serving is a handler that serves each request with router as the
// caller, as inProcess does for a command in the server.
func (c Caller) serving(router http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.apply(r)
		router.ServeHTTP(w, r)
	})
}

// childStderr passes a child's stderr on, line by line, until the Go
// runtime's "fatal error:" line: that line still reaches the student,
// the stacks after it (which a runtime throw prints whatever
// GOTRACEBACK says) do not, and fatal keeps it.
type childStderr struct {
	w       io.Writer
	mu      sync.Mutex
	partial []byte
	fatal   string
}

// maxPartialLine is the most of a line held back before it is passed on
// whole or not.
const maxPartialLine = 64 << 10

func (e *childStderr) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.partial = append(e.partial, p...)
	for {
		i := bytes.IndexByte(e.partial, '\n')
		if i < 0 {
			break
		}
		if err := e.line(e.partial[:i+1]); err != nil {
			return 0, err
		}
		e.partial = e.partial[i+1:]
	}
	if len(e.partial) > maxPartialLine {
		err := e.line(e.partial)
		e.partial = nil
		if err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (e *childStderr) line(l []byte) error {
	if e.fatal != "" {
		return nil
	}
	if bytes.HasPrefix(l, []byte("fatal error: ")) {
		e.fatal = strings.TrimSpace(string(l))
	}
	_, err := e.w.Write(l)
	return err
}

// flush passes on what is left of a last line without its newline.
func (e *childStderr) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.partial) > 0 {
		_ = e.line(e.partial)
		e.partial = nil
	}
}

// fatalError is the runtime's "fatal error:" line, if the child said one.
func (e *childStderr) fatalError() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fatal
}

// clip is s cut to what a log line should hold.
func clip(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}
