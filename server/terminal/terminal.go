// Package terminal is kubelab's terminal in the browser: the real kubectl
// (k8s.io/kubectl's commands, in this process) and a read-only etcdctl,
// run for the signed-in student over a websocket. Every API request a
// command makes goes through kubelab's router with the browser's own
// credentials, so it is authenticated, authorized, admitted, limited and
// traced as the student's. docs/SECURITY.md ("The terminal") has the
// rules that keep it from reaching what the student may not.
package terminal

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/wshub"
	"github.com/kubelab/kubelab/web/i18n"
)

// Limits are the per-user caps, and the server's.
type Limits struct {
	// Commands is how many commands one user may run at once, over every
	// tab.
	Commands int
	// Total is how many commands the server runs at once, every user's
	// together (0: no limit). In processes of their own each holds about
	// 66 MiB, so a class's worst case is bounded by it, not by its size.
	Total int
	// Output is the most one command may print; past it the command is
	// stopped.
	Output int64
	// RunTime is the longest one command may run (a watch included).
	RunTime time.Duration
	// Stdin is the largest paste a command may read.
	Stdin int
	// Memory and CPU bound what one kubectl command may use when commands
	// run in processes of their own (Config.Processes): the heap it may
	// add, and its processor time.
	Memory int64
	CPU    time.Duration
}

// DefaultLimits are the caps of a class: a watch and a command beside it,
// a megabyte of output, ten minutes.
// Of them all at once, 64 commands: about 4 GiB in processes.
var DefaultLimits = Limits{Commands: 2, Total: 64, Output: 1 << 20, RunTime: 10 * time.Minute, Stdin: 512 << 10,
	Memory: 256 << 20, CPU: time.Minute}

// Config is what the terminal needs from the server.
type Config struct {
	// Router serves the API requests of commands (kubelab's own Echo).
	Router http.Handler
	// Etcd, if set, is the member etcdctl reads in local mode.
	Etcd EtcdReader
	// Classroom mode: students must be signed in, and etcdctl is refused.
	Classroom bool
	// Processes runs each kubectl command in a child process of kubelab's
	// binary, under Limits.Memory and Limits.CPU (see child.go), rather
	// than in the server. The binary must call RunCommandIfAsked first.
	Processes bool
	// Kubeconfig is the admin kubeconfig's path, shown in local mode.
	Kubeconfig string
	// Websockets counts each user's websockets against the cap the live
	// views and the labs share.
	Websockets wshub.Counter
	// Authenticate is the front door's authenticator, with which a
	// terminal in classroom mode checks, while it is open, that its
	// browser is still signed in (see endAtSignOut).
	Authenticate func(*http.Request) (pipeline.User, bool, error)
	Limits       Limits
	Logger       *slog.Logger
}

// Terminal runs the commands.
type Terminal struct {
	cfg     Config
	mu      sync.Mutex
	running map[string]int
	total   int // of running
	ctx     context.Context
	stop    context.CancelFunc
}

// New returns a Terminal; Close ends every command.
func New(cfg Config) *Terminal {
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	// A watch runs in a process of its own even without Processes, under
	// a process's limits: none is no limit, nor a process that can start.
	cfg.Limits.Memory = cmp.Or(cfg.Limits.Memory, DefaultLimits.Memory)
	cfg.Limits.CPU = cmp.Or(cfg.Limits.CPU, DefaultLimits.CPU)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Terminal{cfg: cfg, running: map[string]int{}}
	t.ctx, t.stop = context.WithCancel(context.Background())
	return t
}

// Close ends every running command: the server is shutting down.
func (t *Terminal) Close() { t.stop() }

// enter counts a command of user against the caps; it says why not, or
// nil.
func (t *Terminal) enter(user string) *refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running[user] >= t.cfg.Limits.Commands {
		return refuse("cap.commands", fmt.Sprint(t.cfg.Limits.Commands))
	}
	if t.cfg.Limits.Total > 0 && t.total >= t.cfg.Limits.Total {
		return refuse("cap.total", fmt.Sprint(t.cfg.Limits.Total))
	}
	t.running[user]++
	t.total++
	return nil
}

func (t *Terminal) leave(user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	if t.running[user]--; t.running[user] <= 0 {
		delete(t.running, user)
	}
}

// Messages between page and server, one JSON object each.
type (
	// inMsg is what the page sends: run a line (with the stdin box), stop
	// the running command, or complete a line.
	inMsg struct {
		T     string `json:"t"`
		Line  string `json:"line,omitempty"`
		Stdin string `json:"stdin,omitempty"`
		ID    int    `json:"id,omitempty"`
	}
	// outMsg is what the server sends: hello, o (stdout), e (stderr),
	// exit, completions.
	outMsg struct {
		T     string   `json:"t"`
		Data  string   `json:"d,omitempty"`
		Code  *int     `json:"code,omitempty"`
		ID    int      `json:"id,omitempty"`
		Items []string `json:"items,omitempty"`
		User  string   `json:"user,omitempty"`
		NS    string   `json:"ns,omitempty"`
		Etcd  *bool    `json:"etcd,omitempty"`
	}
)

// ServeWS is the terminal's websocket, /ui/ws/terminal.
func (t *Terminal) ServeWS(c echo.Context) error {
	r := c.Request()
	_, user, _ := pipeline.FromContext(r.Context())
	if t.cfg.Classroom && user.IsAnonymous() {
		return pipeline.Unauthorized()
	}
	// The caps count the authenticated user, not a name they impersonate.
	owner, _ := pipeline.AuthenticatedFromContext(r.Context())
	if t.cfg.Websockets != nil {
		if !t.cfg.Websockets.Enter(owner.Name) {
			return wshub.TooMany(t.cfg.Websockets)
		}
		defer t.cfg.Websockets.Leave(owner.Name)
	}
	// No OriginPatterns: only pages of this host may connect, as for the
	// web UI's other websockets.
	conn, err := websocket.Accept(c.Response(), r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil // Accept has answered (403 for a foreign Origin).
	}
	conn.SetReadLimit(int64(t.cfg.Limits.Stdin) + 64<<10)
	from := CallerOf(r)
	s := &session{t: t, conn: conn, lang: i18n.Of(r), owner: owner.Name,
		id: identity{router: t.cfg.Router, from: from, server: from.server(), namespace: classroom.NamespaceOf(user), logger: t.cfg.Logger}}
	if !t.cfg.Classroom {
		s.id.etcd = t.cfg.Etcd
	}
	if t.cfg.Processes {
		dir, err := os.MkdirTemp("", "kubelab-scratch-")
		if err != nil {
			conn.Close(websocket.StatusInternalError, "no scratch directory")
			return nil
		}
		defer os.RemoveAll(dir)
		s.scratch = dir
	}
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	if t.cfg.Classroom && t.cfg.Authenticate != nil {
		go s.endAtSignOut(ctx)
	}
	etcd := s.id.etcd != nil
	s.send(outMsg{T: "hello", User: user.Name, NS: s.id.namespace, Etcd: &etcd})
	s.serve(ctx)
	conn.Close(websocket.StatusNormalClosure, "")
	return nil
}

// signInCheck is how often a terminal in a class checks that its browser
// is still signed in.
const signInCheck = 5 * time.Second

// endAtSignOut ends the session, and its running command, once its
// browser's sign-in has ended (signed out in this tab or another, or its
// token revoked): a watch would otherwise go on showing what its student
// may no longer read. A store that does not answer is not a sign-out: it
// is asked again at the next check (and every request of the command fails
// meanwhile).
func (s *session) endAtSignOut(ctx context.Context) {
	tick := time.NewTicker(signInCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A request of its own each time: the authenticator removes the
		// bearer token it has read.
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		s.id.from.apply(r)
		u, _, err := s.t.cfg.Authenticate(r)
		if err == nil && u.Name != s.owner {
			s.say(refuse("signedout"))
			// Closed as a closing server does, for the page to say why;
			// serve then ends the command.
			s.conn.Close(websocket.StatusNormalClosure, "signed out")
			return
		}
	}
}

// session is one browser terminal: one command at a time, as in a shell.
type session struct {
	t     *Terminal
	conn  *websocket.Conn
	lang  i18n.Lang
	owner string
	id    identity

	writeMu sync.Mutex
	mu      sync.Mutex
	cancel  context.CancelFunc // of the running command, if any
	done    chan struct{}
	// scratch is the session's own directory, where its shell's files are
	// (Config.Processes only).
	scratch string
}

func (s *session) send(m outMsg) bool {
	b, _ := json.Marshal(m)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageText, b) == nil
}

func (s *session) say(r *refusal) { s.send(outMsg{T: "e", Data: say(s.lang, r) + "\n"}) }

func (s *session) exit(code int) { s.send(outMsg{T: "exit", Code: &code}) }

// serve reads the page's messages until it goes away, then stops the
// running command and waits for it.
func (s *session) serve(ctx context.Context) {
	// Tabs are answered one at a time by one goroutine of the session's:
	// one waits in tabs while another is answered, and the others are
	// dropped, so a flood of them costs a read each, never a goroutine
	// each. A Tab sent once the last was answered always has the place:
	// the answerer took the last before answering it.
	tabs := make(chan inMsg, 1)
	answerer, stopAnswering := context.WithCancel(ctx)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for {
			select {
			case <-answerer.Done():
				return
			case m := <-tabs:
				s.complete(answerer, m)
			}
		}
	}()
	defer func() {
		stopAnswering()
		<-answered
	}()
	defer func() {
		s.interrupt()
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		if done != nil {
			<-done
		}
	}()
	for {
		_, b, err := s.conn.Read(ctx)
		if err != nil {
			return
		}
		var m inMsg
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.T {
		case "run":
			s.start(ctx, m)
		case "int":
			s.interrupt()
		case "complete":
			select {
			case tabs <- m:
			default:
			}
		}
	}
}

func (s *session) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

// start runs a line on a goroutine of its own, unless one is running.
func (s *session) start(ctx context.Context, m inMsg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		select {
		case <-s.done:
		default:
			return // the page sends a line only once the last one ended
		}
	}
	if len(m.Stdin) > s.t.cfg.Limits.Stdin {
		s.say(refuse("cap.stdin", sizeString(int64(s.t.cfg.Limits.Stdin))))
		s.exit(1)
		return
	}
	if r := s.t.enter(s.owner); r != nil {
		if r.key == "cap.total" {
			s.t.cfg.Logger.Warn("the terminal refused a command: the server runs the most commands it may at once (terminal.Limits.Total)", "user", s.owner)
		}
		s.say(r)
		s.exit(1)
		return
	}
	withCause, stop := context.WithCancelCause(ctx)
	cctx, cancel := context.WithTimeoutCause(withCause, s.t.cfg.Limits.RunTime, errTimeCap)
	s.cancel = func() { stop(context.Canceled) }
	s.done = make(chan struct{})
	done := s.done
	go func() {
		code := s.run(cctx, stop, m)
		switch context.Cause(cctx) {
		case errTimeCap:
			s.say(refuse("cap.time", s.t.cfg.Limits.RunTime.String()))
			code = 124 // as timeout(1) ends a command
		case errOutputCap:
			s.say(refuse("cap.output", sizeString(s.t.cfg.Limits.Output)))
			code = max(code, 1)
		case errMemoryCap:
			s.say(refuse("cap.memory", sizeString(s.t.cfg.Limits.Memory)))
		case errCPUCap:
			s.say(refuse("cap.cpu", s.t.cfg.Limits.CPU.String()))
		case context.Canceled:
			if ctx.Err() == nil {
				s.send(outMsg{T: "e", Data: say(s.lang, refuse("interrupted")) + "\n"})
				code = 130
			}
		}
		// Done before the page hears of it: the page sends the next line
		// as soon as it does.
		cancel()
		s.t.leave(s.owner)
		close(done)
		s.exit(code)
	}()
}

var (
	errTimeCap   = fmt.Errorf("the command ran out of time")
	errOutputCap = fmt.Errorf("the command wrote too much")
)

// run runs one line and returns its exit status. Whatever goes wrong in
// it ends the command, never the server.
func (s *session) run(ctx context.Context, stop context.CancelCauseFunc, m inMsg) (code int) {
	defer func() {
		if p := recover(); p != nil {
			s.t.cfg.Logger.Error("terminal command panicked", "line", m.Line, "panic", p)
			s.send(outMsg{T: "e", Data: fmt.Sprintf("error: the command failed inside kubelab: %v\n", p)})
			code = 1
		}
	}()
	b := &budget{left: s.t.cfg.Limits.Output}
	out := &capped{s: s, stream: "o", budget: b, stop: stop}
	errOut := &capped{s: s, stream: "e", budget: b, stop: stop}
	streams := genericiooptions.IOStreams{In: strings.NewReader(m.Stdin), Out: out, ErrOut: errOut}
	words := strings.Fields(m.Line)
	if len(words) == 0 {
		return 0
	}
	if s.t.cfg.Processes {
		// The line, whole, to a shell in a process of its own (child.go,
		// shell.go).
		code, cause := runChild(ctx, s.id, s.lang, s.t.cfg.Limits, childSpec{Line: m.Line, Scratch: s.scratch}, streams)
		if cause != nil {
			stop(cause)
		}
		return code
	}
	argv, err := split(m.Line)
	if err != nil {
		s.say(err.(*refusal))
		return 2
	}
	if len(argv) == 0 {
		return 0
	}
	switch argv[0] {
	case "kubectl", "k":
		if r := checkLine(argv[1:], false); r != nil {
			s.say(r)
			return 1
		}
		if watches(argv[1:]) && childHook.Load() {
			// While it watches, kubectl sets a handler of its own for
			// SIGTERM that exits the process it runs in: in the server's,
			// a student's watch would end the class at docker stop, before
			// the server's own shutdown ran.
			code, cause := runChild(ctx, s.id, s.lang, s.t.cfg.Limits, childSpec{Args: argv[1:]}, streams)
			if cause != nil {
				stop(cause)
			}
			return code
		}
		return runKubectl(ctx, s.id, argv[1:], streams.In, streams, s.say)
	case "etcdctl":
		if s.id.etcd == nil {
			s.say(refuse("etcd.classroom"))
			return 1
		}
		return runEtcdctl(ctx, s.id.etcd, argv[1:], streams, s.say)
	default:
		s.say(refuse("notkubectl", argv[0]))
		return 127
	}
}

// capped is a stream to the page that stops the command past the output
// cap. Both streams of a command share one budget.
type capped struct {
	s      *session
	stream string
	budget *budget
	stop   context.CancelCauseFunc
}

type budget struct{ left int64 }

func (w *capped) Write(p []byte) (int, error) {
	if atomic.AddInt64(&w.budget.left, -int64(len(p))) < 0 {
		w.stop(errOutputCap)
		return 0, io.ErrShortWrite
	}
	if !w.s.send(outMsg{T: w.stream, Data: string(p)}) {
		w.stop(context.Canceled)
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
