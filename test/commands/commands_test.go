// Package commands_test runs every command the lesson and the labs tell a
// student to type, with the real kubectl and etcdctl, through bash (the
// commands use pipes, jq, heredocs and loops), against a kubelab started
// in-process: in local mode, in the lesson's namespace, and in classroom
// mode as a signed-in student, in the namespace the pages show them. Each
// lab command runs on the lab step it belongs to, and the step must pass.
package commands_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// windowFreshness shortens kube's 75 s, the age the oldest event of a full
// watch cache window must reach before the window drops it, so that the
// gone lab's window step takes seconds; its command's `sleep 76` (the real
// 75 s, and one more) is rewritten to windowSleep to match.
const (
	windowFreshness = time.Second
	windowSleep     = "sleep 2"
)

// A lesson command as the page shows it, and where.
type lessonCommand struct {
	lang i18n.Lang
	page string
	line string // as written, in the lesson's namespace
	// raw is set for what "Run it live" runs in place of a command that
	// no request to kubelab can stand for.
	raw bool
}

// lessonCommands are the commands of both languages' lessons, in order,
// each once: the "$ " lines of command blocks and code samples, the
// proofs of the misconception notes, and the raw equivalents Run it live
// shows.
func lessonCommands(t *testing.T) []lessonCommand {
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	var out []lessonCommand
	seen := map[string]bool{}
	var lang i18n.Lang
	add := func(page, line string, raw bool) {
		if !seen[line] {
			seen[line] = true
			out = append(out, lessonCommand{lang: lang, page: page, line: line, raw: raw})
		}
	}
	for _, lang = range i18n.Langs {
		for _, p := range lessons[lang].Pages {
			for _, b := range p.Blocks {
				switch b.Kind {
				case web.Command:
					for _, c := range web.Commands(b.Command) {
						add(p.Slug, c, false)
					}
					if raw := web.RawEquivalent(b.ID, web.DemoNamespace); raw != "" {
						add(p.Slug, raw, true)
					}
				case web.Code:
					for _, c := range web.Commands(b.Text) {
						add(p.Slug, c, false)
					}
				case web.Misconception:
					for _, c := range b.Proof {
						add(p.Slug, c, false)
					}
				}
			}
		}
	}
	return out
}

// The lesson's commands and the labs' run against kubelabs of their own,
// side by side, so that the whole takes as long as the labs do.

func TestLessonCommandsLocalMode(t *testing.T) {
	t.Parallel()
	runLesson(t, localReader(t, false))
}

func TestLabCommandsLocalMode(t *testing.T) {
	t.Parallel()
	runLabs(t, localReader(t, false))
}

func TestLessonCommandsClassroomMode(t *testing.T) {
	t.Parallel()
	runLesson(t, studentReader(t, false))
}

func TestLabCommandsClassroomMode(t *testing.T) {
	t.Parallel()
	runLabs(t, studentReader(t, false))
}

// The same commands, typed as printed into the page's own terminal.

func TestLessonCommandsInThePageLocalMode(t *testing.T) {
	t.Parallel()
	runLesson(t, localReader(t, true))
}

func TestLabCommandsInThePageLocalMode(t *testing.T) {
	t.Parallel()
	runLabs(t, localReader(t, true))
}

func TestLessonCommandsInThePageClassroomMode(t *testing.T) {
	t.Parallel()
	runLesson(t, studentReader(t, true))
}

func TestLabCommandsInThePageClassroomMode(t *testing.T) {
	t.Parallel()
	runLabs(t, studentReader(t, true))
}

// Every command has an expectation and every expectation a command, so
// that a new command cannot go untested nor a removed one linger here.
func TestEveryCommandHasAnExpectation(t *testing.T) {
	commands := map[string]bool{}
	for _, c := range lessonCommands(t) {
		commands[c.line] = true
	}
	for _, l := range labs.All() {
		for _, s := range l.Steps {
			if s.Command != "" {
				commands[s.Command] = true
			}
		}
	}
	for c := range commands {
		if _, ok := expectations[c]; !ok {
			t.Errorf("no expectation for %q", c)
		}
	}
	for key := range expectations {
		if !commands[key] {
			t.Errorf("expectation for %q: no lesson or lab has that command any more", key)
		}
	}
}

// startLab runs kubelab with the watch cache's freshness shortened, and
// its terminal's lines in processes of their own, as kubelab's binary
// runs them.
func startLab(t *testing.T, options ...func(*server.Config)) *kubelabtest.Lab {
	return kubelabtest.Start(t, append(options, func(c *server.Config) {
		c.WatchCacheEventFreshness = windowFreshness
		c.TerminalProcesses = true
	})...)
}

// localReader is a reader of a kubelab in local mode, with the admin
// kubeconfig kubelab writes, or the page's terminal if inPage.
func localReader(t *testing.T, inPage bool) *reader {
	l := startLab(t)
	r := &reader{t: t, lab: l, ns: web.DemoNamespace, inPage: inPage}
	r.terminal(l.KubeconfigPath())
	return r
}

// studentReader is a student signed in to a class, with the kubeconfig
// their browser downloads (HTTPS, kubelab's CA, a token of their own), or
// the page's terminal if inPage.
func studentReader(t *testing.T, inPage bool) *reader {
	l := startLab(t, func(c *server.Config) {
		c.Classroom = true
		c.InstructorToken = "instructor-token-0123456789"
	})
	st, token, err := l.Class().Join(context.Background(), "alice", "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{t: t, lab: l, ns: st.Name, token: token, student: true, inPage: inPage}
	code, kubeconfig := r.do("POST", "/kubelab/v1/kubeconfig", "")
	if code != http.StatusOK {
		t.Fatalf("kubeconfig: HTTP %d: %s", code, kubeconfig)
	}
	path := t.TempDir() + "/config"
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	r.terminal(path)
	return r
}

// runLabs does every lab with the commands its steps show.
func runLabs(t *testing.T, r *reader) {
	began := time.Now()
	for _, l := range labs.All() {
		t.Run(l.ID, func(t *testing.T) { runLab(t, r, l) })
	}
	t.Logf("%s: every lab in %s", r.ns, time.Since(began).Round(time.Millisecond))
}

// labCommands are the labs' commands as their steps show them in ns:
// the lesson's commands among them run on their lab steps instead.
func labCommands(ns string) map[string]bool {
	out := map[string]bool{}
	for _, l := range labs.All() {
		for _, s := range l.Steps {
			if s.Command != "" {
				out[strings.ReplaceAll(s.Command, "NS", ns)] = true
			}
		}
	}
	return out
}

// runLesson runs the lesson's commands, in the page's order, as the pages
// show them to the reader.
func runLesson(t *testing.T, r *reader) {
	began := time.Now()
	// An exact list below etcd's compaction is one of the lesson's
	// commands: compact with kubelab's own compactor, as its periodic round
	// would have by then. Like kube-apiserver's, it tells the watch caches
	// (through compact_rev_key), which then leave such lists to etcd; a
	// compaction behind its back would not, and the cache would serve them.
	if _, err := r.lab.Server.EtcdCompactor().CompactNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	onLabSteps := labCommands(r.ns)
	ran := map[string]bool{}
	pages := map[string]string{}
	for _, c := range lessonCommands(t) {
		line := web.InNamespace(c.line, r.ns)
		// The page shows the command in the reader's namespace.
		url := "/lesson/" + c.page + "?lang=" + string(c.lang)
		if _, ok := pages[url]; !ok {
			code, body := r.do("GET", url, "", "Accept-Language", string(c.lang))
			if code != http.StatusOK {
				t.Fatalf("lesson page %s: HTTP %d", url, code)
			}
			pages[url] = body
		}
		if !strings.Contains(pages[url], html.EscapeString(line)) {
			t.Errorf("the page %s does not show %q", url, line)
		}
		e, ok := expectations[c.line]
		if !ok {
			continue // TestEveryCommandHasAnExpectation says so
		}
		reason := e.cannotRun(r)
		if mark := e.pageMark(r, c.lang); reason != "" && (mark == "" || !strings.Contains(pages[url], html.EscapeString(mark))) {
			t.Errorf("the page %s does not mark %q as a command that cannot run here (want %q)", url, c.line, mark)
		}
		if (onLabSteps[line] && !e.lessonNeeds) || ran[line] {
			continue // run on its lab step, or already
		}
		ran[line] = true
		t.Run(c.page+": "+firstLine(c.line), func(t *testing.T) {
			if reason != "" {
				t.Skip("cannot run on kubelab: " + reason)
			}
			check(t, r.in(t), line, e, r.start(line, e.timeout).wait())
		})
	}
	t.Logf("%s: the lesson's commands in %s", r.ns, time.Since(began).Round(time.Millisecond))
}

// runLab does one lab, step by step, with the command each step shows.
func runLab(t *testing.T, parent *reader, l *labs.Lab) {
	r := parent.in(t)
	if l.ID == "watch" {
		// A label that already has the value asked for changes nothing.
		check(t, r, "kubectl -n "+r.ns+" label pod ssa-demo demo-round=unchanged --overwrite", expectation{output: []string{`^pod/ssa-demo labeled\n$`}},
			r.start("kubectl -n "+r.ns+" label pod ssa-demo demo-round=unchanged --overwrite", 0).wait())
	}
	if l.ID == "extend" {
		notesForTheClass(t, r)
	}
	v := r.labView(l.ID, "POST", "/start", "")
	var background []*running
	var backgroundChecks []func()
	var backgroundWants [][]*regexp.Regexp
	vars := map[string]string{}
	for i, s := range l.Steps {
		sv := v.Steps[i]
		if sv.ID != s.ID {
			t.Fatalf("step %d is %s on the page, %s in the lab", i, sv.ID, s.ID)
		}
		if s.IsQuestion() {
			// A question may come with a command that shows the student
			// their answer (etcd's mod revision of their pod).
			if s.Command != "" {
				e := expectations[s.Command]
				line := strings.ReplaceAll(s.Command, "NS", r.ns)
				if e.cannotRun(r) == "" {
					out := check(t, r, line, e, r.start(line, e.timeout).wait())
					if e.capture != "" {
						vars[e.capture] = strings.TrimSpace(out)
					}
				}
			}
			answer, ok := answers[l.ID+"/"+s.ID]
			if !ok {
				t.Fatalf("no answer for question %s/%s", l.ID, s.ID)
			}
			if name, personal := strings.CutPrefix(answer, "$"); personal {
				if answer, ok = vars[name]; !ok && name == "MODREV" {
					// In a class, the inspector shows it.
					answer = inspectorModRevision(t, r, "/registry/pods/"+r.ns+"/ssa-demo")
				} else if !ok {
					t.Fatalf("%s/%s: the student's own %s was never shown to them", l.ID, s.ID, name)
				}
			}
			code, body := r.do("POST", labhttp.APIPath+"/"+l.ID+"/steps/"+s.ID+"/answer", `{"answer":`+strconv.Quote(answer)+`}`)
			if code != http.StatusOK || !strings.Contains(body, `"correct":true`) {
				t.Fatalf("%s/%s: answer %q: HTTP %d: %s", l.ID, s.ID, answer, code, body)
			}
			continue
		}
		if s.Command == "" {
			if s.Open == labs.Inspector {
				// Checked in the browser's inspector, as the step says:
				// the custom resource's key, then a pod's.
				inspectorRead(t, r, "/registry/lab.example.com/notes/"+r.ns+"/hello")
				inspectorRead(t, r, "/registry/pods/"+r.ns+"/ssa-demo")
			}
			r.waitPassed(l.ID, s.ID)
			continue
		}
		e, ok := expectations[s.Command]
		if !ok {
			t.Fatalf("lab %s/%s: no expectation for %q", l.ID, s.ID, s.Command)
		}
		// The command as the step shows it, in the reader's namespace.
		line := sv.Command
		if want := strings.ReplaceAll(s.Command, "NS", r.ns); line != want {
			t.Fatalf("%s/%s shows %q, want %q", l.ID, s.ID, line, want)
		}
		if l.ID == "watch" && s.ID == "modify" {
			// The step says why a command that changed nothing did not
			// pass it.
			line := "kubectl -n " + r.ns + " label pod ssa-demo demo-round=unchanged --overwrite"
			check(t, r, line, expectation{output: []string{`^pod/ssa-demo not labeled\n$`}}, r.start(line, 0).wait())
			if st := step(r.labView(l.ID, "POST", "/check", ""), s.ID); st.State != labhttp.StateCurrent || !strings.Contains(st.Hint, `"not labeled"`) {
				t.Errorf("after a label that changed nothing, %s/%s is %s, with the hint %q", l.ID, s.ID, st.State, st.Hint)
			}
		}
		// Nothing done so far passes the step: its own command must.
		if st := step(r.labView(l.ID, "POST", "/check", ""), s.ID); st.State != labhttp.StateCurrent {
			t.Errorf("%s/%s is %s before its command ran: %s", l.ID, s.ID, st.State, st.Evidence)
		}
		for k, val := range vars {
			line = strings.ReplaceAll(line, k, val)
		}
		if reason := e.cannotRun(r); reason != "" {
			t.Logf("%s/%s: cannot run %q on kubelab: %s", l.ID, s.ID, line, reason)
		} else if e.background {
			run := r.start(line, e.timeout)
			background = append(background, run)
			backgroundWants = append(backgroundWants, e.patterns(r))
			backgroundChecks = append(backgroundChecks, func() { check(t, r, line, e, run.wait()) })
		} else {
			out := check(t, r, line, e, r.start(line, e.timeout).wait())
			if e.capture != "" {
				vars[e.capture] = strings.TrimSpace(out)
			}
			for name, pattern := range e.extract {
				if m := regexp.MustCompile(pattern).FindStringSubmatch(out); m != nil {
					vars[name] = m[1]
				}
			}
		}
		if e.passVia != nil {
			// The step says it cannot pass from the terminal; its command
			// alone must not pass it.
			if st := step(r.labView(l.ID, "POST", "/check", ""), s.ID); st.State == labhttp.StatePassed {
				t.Errorf("%s/%s passed from the terminal, though the step says it cannot: %s", l.ID, s.ID, st.Evidence)
			}
			e.passVia(t, r)
		}
		st := r.waitPassed(l.ID, s.ID)
		t.Logf("%s/%s passed: %s", l.ID, s.ID, st.Evidence)
	}
	// The lab is done: stop its watches as a student does, with Ctrl-C,
	// once they show what the lab asked them to watch for.
	for i, run := range background {
		run.awaitPrinted(backgroundWants[i], backgroundBound)
		run.interrupt()
	}
	for _, c := range backgroundChecks {
		c()
	}
	if v := r.labView(l.ID, "GET", "", ""); !v.Done {
		t.Errorf("lab %s not done: %+v", l.ID, v)
	}
}

// notesForTheClass is what the README asks of an instructor before the
// extend lab, done as the admin: the lesson's Note CRD, and a ClusterRole
// aggregated into edit so that each student may create Notes in their
// namespace. In local mode the reader is cluster-admin and applies the
// CRD the same way.
func notesForTheClass(t *testing.T, r *reader) {
	t.Helper()
	const role = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: lab-notes-edit
  labels: {rbac.authorization.k8s.io/aggregate-to-edit: "true"}
rules:
- apiGroups: [lab.example.com]
  resources: [notes]
  verbs: [get, list, watch, create, update, patch, delete]
`
	crd := strings.TrimSuffix(strings.TrimPrefix(crdApply, "kubectl apply -f - <<'EOF'\n"), "\nEOF")
	for _, manifest := range []string{crd, role} {
		cmd := exec.Command(clitest.Kubectl(t), "--kubeconfig", r.lab.KubeconfigPath(), "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the instructor's kubectl apply: %v: %s", err, out)
		}
	}
	// The CRD is served once it is established.
	for deadline := time.Now().Add(20 * time.Second); ; {
		cmd := exec.Command(clitest.Kubectl(t), "--kubeconfig", r.lab.KubeconfigPath(), "get", "--raw", "/apis/lab.example.com/v1")
		if cmd.Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Note CRD is not served")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inspectorRead reads key in the etcd inspector, as the student's browser does.
func inspectorRead(t *testing.T, r *reader, key string) string {
	t.Helper()
	code, body := r.do("GET", "/ui/etcd/value?key="+url.QueryEscape(key), "")
	if code != http.StatusOK {
		t.Fatalf("the inspector's read of %s: HTTP %d: %.300s", key, code, body)
	}
	return body
}

// inspectorModRevision is the mod revision the inspector shows for key.
func inspectorModRevision(t *testing.T, r *reader, key string) string {
	t.Helper()
	var v struct {
		ModRevision int64 `json:"modRevision"`
	}
	if err := json.Unmarshal([]byte(inspectorRead(t, r, key)), &v); err != nil || v.ModRevision == 0 {
		t.Fatalf("the inspector's mod revision of %s: %v", key, err)
	}
	return strconv.FormatInt(v.ModRevision, 10)
}

// check asserts a command's exit status and output, and returns its output.
func check(t *testing.T, r *reader, line string, e expectation, got result) string {
	t.Helper()
	want := e.exit
	if got.interruptedInPage {
		want = 130
	}
	if got.code != want {
		t.Errorf("%s\nexit %d, want %d; it printed:\n%s", line, got.code, want, got.out)
		return got.out
	}
	for _, re := range e.patterns(r) {
		if !re.MatchString(got.out) {
			t.Errorf("%s\nprinted no match for %s:\n%s", line, re, got.out)
		}
	}
	t.Logf("ok in %s: %s", got.took.Round(time.Millisecond), firstLine(line))
	return got.out
}

// patterns are e's output patterns in the reader's namespace.
func (e expectation) patterns(r *reader) []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, want := range e.output {
		res = append(res, regexp.MustCompile(strings.ReplaceAll(want, "NS", regexp.QuoteMeta(r.ns))))
	}
	return res
}

// backgroundBound is how long a lab's watch may take to show what its
// steps caused, wide of a loaded machine; past it, the check fails
// with what the watch did print.
const backgroundBound = 60 * time.Second

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return s
}
