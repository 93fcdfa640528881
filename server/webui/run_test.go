package webui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/web"
)

// sent is one HTTP request as a client sent it: what "Run it live" must
// match, request for request, in order.
type sent struct {
	Method, Target, Accept, ContentType, Body string
}

var (
	kubectlRequestLine = regexp.MustCompile(`"Request" verb="([A-Z]+)" url="([^"]+)" headers=<`)
	kubectlRequestBody = regexp.MustCompile(`"Request Body" body=("(?:[^"\\]|\\.)*")`)
	// A list-then-watch watches from the revision its list was read at,
	// which moves between two runs; everything else must match exactly.
	watchFromList = regexp.MustCompile(`resourceVersion=\d+&watch=true$`)
)

// kubectlRequests reads the requests kubectl -v=8 logged, in order.
func kubectlRequests(t *testing.T, stderr string) []sent {
	t.Helper()
	var out []sent
	body := ""
	inHeaders := false
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if inHeaders {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
			switch {
			case !strings.HasPrefix(line, "\t"):
				inHeaders = false
			case ok && k == "Accept" && out[len(out)-1].Accept == "":
				out[len(out)-1].Accept = v
			case ok && k == "Content-Type" && out[len(out)-1].ContentType == "":
				out[len(out)-1].ContentType = v
			}
			continue
		}
		if m := kubectlRequestBody.FindStringSubmatch(line); m != nil {
			b, err := strconv.Unquote(m[1])
			if err != nil {
				t.Fatalf("request body %s: %v", m[1], err)
			}
			body = b
			continue
		}
		if m := kubectlRequestLine.FindStringSubmatch(line); m != nil {
			u, err := url.Parse(m[2])
			if err != nil {
				t.Fatalf("request url %s: %v", m[2], err)
			}
			out = append(out, sent{Method: m[1], Target: u.RequestURI(), Body: body})
			body, inHeaders = "", true
		}
	}
	return out
}

// kubectlArgs turns a lesson command line into kubectl's arguments, at
// -v=8: the words before a pipe or a comment, without "$ kubectl".
func kubectlArgs(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord := false
	quote := rune(0)
	for _, r := range strings.TrimPrefix(line, "$ ") {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	var args []string
	verbose := false
	for _, w := range words {
		if w == "|" || strings.HasPrefix(w, "#") {
			break
		}
		if strings.HasPrefix(w, "-v=") {
			w, verbose = "-v=8", true
		}
		args = append(args, w)
	}
	if len(args) == 0 || args[0] != "kubectl" {
		t.Fatalf("not a kubectl command: %q", line)
	}
	args = args[1:]
	if !verbose {
		args = append(args, "-v=8")
	}
	return args
}

// buttonRequests presses "Run it live" for id and returns the requests it
// sent, in order: all of them once it ends, or the first n of a command
// that never ends (a watch).
func buttonRequests(t *testing.T, lab served, id, value string, n int, endless bool) []sent {
	t.Helper()
	c := dial(t, lab, "/ui/ws/run?cmd="+id+"&value="+url.QueryEscape(value))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []sent
	for {
		if endless && len(out) == n {
			return out
		}
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("run %s: %v after %d requests", id, err, len(out))
		}
		var m struct {
			T       string            `json:"t"`
			Line    string            `json:"line"`
			Message string            `json:"message"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		switch m.T {
		case "request":
			method, rest, _ := strings.Cut(m.Line, " ")
			out = append(out, sent{Method: method, Target: strings.TrimSuffix(rest, " HTTP/1.1"),
				Accept: m.Headers["Accept"], ContentType: m.Headers["Content-Type"], Body: m.Body})
		case "error":
			t.Fatalf("run %s: %s", id, m.Message)
		case "end":
			return out
		}
	}
}

// TestRunItLiveSendsWhatKubectlSends presses every "Run it live" button of
// the lesson and runs the real kubectl, at -v=8, on the command line the
// lesson shows beside it: the button must send the same requests, in the
// same order, with the same method, path, query, Accept and body.
func TestRunItLiveSendsWhatKubectlSends(t *testing.T) {
	t.Parallel()
	// An API of its own: label-pod needs the seeded pod's label to be what
	// it last set, or kubectl and the button send different requests.
	lab := startAPI(t)
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// runKubectl runs kubectl as a student's terminal would; a watch that
	// never ends is stopped after stop, with what it sent so far.
	runKubectl := func(t *testing.T, args []string, stop time.Duration) []sent {
		t.Helper()
		o := clitest.Options{Timeout: stop}
		_, stderr, err := clitest.RunWith(t, o, clitest.Kubectl(t), append([]string{"--kubeconfig", cfg, "-s", lab.URL()}, args...)...)
		if err != nil && stop == 0 {
			t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
		}
		return kubectlRequests(t, stderr)
	}
	setLabel := func(t *testing.T, v string) { t.Helper(); label(t, lab, v) }
	compare := func(t *testing.T, kubectl, button []sent) {
		t.Helper()
		if len(kubectl) == 0 {
			t.Fatal("kubectl sent nothing")
		}
		if len(kubectl) != len(button) {
			t.Fatalf("kubectl sent %d requests, the button %d:\nkubectl %+v\nbutton  %+v", len(kubectl), len(button), kubectl, button)
		}
		for i := range kubectl {
			k, b := kubectl[i], button[i]
			if k.Body == "" {
				k.ContentType = "" // kubectl names one even with no body
			}
			k.Target = watchFromList.ReplaceAllString(k.Target, "resourceVersion=N&watch=true")
			b.Target = watchFromList.ReplaceAllString(b.Target, "resourceVersion=N&watch=true")
			if k != b {
				t.Errorf("request %d:\nkubectl %+v\nbutton  %+v", i+1, k, b)
			}
		}
	}

	seen := map[string]bool{}
	for _, p := range lessons["en"].Pages {
		for _, blk := range p.Blocks {
			if blk.Kind != web.Command || !web.LiveCommands[blk.ID] || web.RawEquivalent(blk.ID, "ns") != "" {
				continue
			}
			seen[blk.ID] = true
			t.Run(blk.ID, func(t *testing.T) {
				// Side by side: the commands other than label-pod only
				// read, and what they send does not depend on what they
				// read; the watches wait out their timeoutSeconds.
				t.Parallel()
				args := kubectlArgs(t, blk.Command)
				// kubectl caches discovery; warm the cache so that what is
				// compared is the command's own requests.
				runKubectl(t, []string{"api-resources"}, 0)
				var stop time.Duration
				endless := blk.ID == "watch-pods"
				if endless {
					stop = 5 * time.Second
				}
				value := ""
				if blk.ID == "label-pod" {
					// The lesson's value, on a pod that does not have it yet.
					for _, a := range args {
						if v, ok := strings.CutPrefix(a, "demo-round="); ok {
							value = v
						}
					}
					setLabel(t, "before")
				}
				want := runKubectl(t, args, stop)
				if blk.ID == "label-pod" {
					setLabel(t, "before")
				}
				compare(t, want, buttonRequests(t, lab, blk.ID, value, len(want), endless))
				if blk.ID == "label-pod" {
					// The label now has the value: kubectl sends no PATCH,
					// and neither may the button.
					again := runKubectl(t, args, 0)
					if len(again) != 1 {
						t.Fatalf("kubectl relabelling with the same value sent %+v", again)
					}
					compare(t, again, buttonRequests(t, lab, blk.ID, value, len(again), false))
				}
			})
		}
	}
	for id := range web.LiveCommands {
		if !seen[id] && web.RawEquivalent(id, "ns") == "" {
			t.Errorf("live command %q is not compared with kubectl", id)
		}
	}
}

// testRunItLiveSaysRawEquivalent: a button that cannot send the command's
// own requests says so on the page, and shows the command it runs.
func testRunItLiveSaysRawEquivalent(t *testing.T, lab *apitest.Server) {
	_, page := apiDo(t, lab, "GET", "/lesson/etcd", "", "")
	if !strings.Contains(page, "Raw equivalent") || !strings.Contains(page, "etcdctl get /registry/pods/internals-demo/ssa-demo") {
		t.Fatalf("the etcd page does not say what Run it live runs:\n%.3000s", page)
	}
	c := dial(t, lab, "/ui/ws/run?cmd=etcd-get")
	req := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "request" })
	if req.Line != "etcd Range /registry/pods/internals-demo/ssa-demo" {
		t.Fatalf("the button ran %q", req.Line)
	}
}
