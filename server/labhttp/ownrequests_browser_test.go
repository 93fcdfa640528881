package labhttp_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

// TestKubelabsOwnRequestsPassNoStep walks every lab, step by step, as a
// student in a class. Before each step the student only opens pages: the
// lesson's tracer, timelines (whose lanes list and watch their pods, and
// see an admin change one of them), the etcd inspector (which loads keys
// and checks, with a denied list of secrets, what they may read) and the
// lab's own page. None of that is the student's doing, so the step stays
// current; then the student does it with their own kubectl, their own
// click in the inspector, or their own answer, and it passes.
//
// It checks what the pages send, not how goroutines meet, and under the
// race detector it took 140 s of the package's 200 s: it runs only
// without it (.ci/run runs it beside the race run).
func TestKubelabsOwnRequestsPassNoStep(t *testing.T) {
	if underRace {
		t.Skip("the labs' walk runs without the race detector: go test -run TestKubelabsOwnRequestsPassNoStep ./server/labhttp")
	}
	t.Parallel()
	lb := kubelabtest.Start(t, classroomMode, func(c *server.Config) { c.WatchCacheEventFreshness = windowFreshness })
	defineNotes(t, lb)
	// The students walk side by side, as in a class, except the one who
	// pushes the watch cache's window: that push ends every watch older
	// than it, a classmate's resumed watch included, so it comes last.
	var gone *labs.Lab
	t.Run("side by side", func(t *testing.T) {
		for _, l := range labs.All() {
			if l.ID == "gone" {
				gone = l
				continue
			}
			t.Run(l.ID, func(t *testing.T) {
				t.Parallel()
				walkLab(t, lb, l)
			})
		}
	})
	if gone == nil {
		t.Fatal("no gone lab")
	}
	t.Run(gone.ID, func(t *testing.T) { walkLab(t, lb, gone) })
}

// walkLab is one student doing lab l: each step only after opening every
// page has left it current.
func walkLab(t *testing.T, lb *kubelabtest.Lab, l *labs.Lab) {
	// A lab's every page, step after step, beside the other labs' walks
	// and the race run: more than Start's three minutes on a loaded machine.
	ctx := browsertest.StartFor(t, 10*time.Minute)
	w := &walk{t: t, ctx: ctx, lb: lb, lab: l.ID}
	w.join("Pat " + l.ID)
	w.u.start(l.ID)
	w.rev = etcdRevision(t, lb)
	for _, st := range l.Steps {
		w.openPages()
		if s := w.u.state(l.ID, st.ID); s != labhttp.StateCurrent {
			t.Fatalf("%s/%s is %s after page loads alone", l.ID, st.ID, s)
		}
		do := w.actions()[st.ID]
		if do == nil {
			t.Fatalf("no student's action for %s/%s", l.ID, st.ID)
		}
		do()
		w.u.waitPassed(l.ID, st.ID)
	}
	if v := w.u.view(l.ID); !v.Done {
		t.Errorf("%s not done: %+v", l.ID, v)
	}
}

// walk is one student going through one lab in their browser.
type walk struct {
	t   *testing.T
	ctx context.Context
	lb  *kubelabtest.Lab
	lab string
	u   user
	ns  string
	// rev is etcd's revision when the lab began; seen is what the
	// student's own clients read on the way (a bookmark's resourceVersion,
	// a 410's message, a list's resourceVersion).
	rev   int64
	seen  string
	round int
}

// join signs the browser in as a new student and takes its session for
// the student's kubectl.
func (w *walk) join(name string) {
	t, ctx := w.t, w.ctx
	browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(w.lb.URL()+"/lesson/request-path"))
	browsertest.Submit(t, ctx, "join", "/lesson/request-path",
		browsertest.Fill(`#name`, name),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, ctx, "signed in", `location.pathname === "/lesson/request-path" && document.querySelector("[data-account]")?.hidden === false`)
	res, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{})
	})
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, c := range res.Cookies {
		if c.Name == authn.SessionCookie || c.Name == authn.SecureSessionCookie {
			token = c.Value
		}
	}
	if token == "" {
		t.Fatal("no session cookie")
	}
	w.u = user{t: t, lab: w.lb, token: token}
	w.ns = w.u.view(w.lab).Namespace
	w.u.name = w.ns
}

// openPages opens every page with a live view, and has an admin change
// the student's pod while the timeline watches it.
func (w *walk) openPages() {
	t, ctx := w.t, w.ctx
	for _, page := range []string{"/lesson/request-path", "/lesson/resource-version", "/lesson/gone", "/lesson/extending", "/lesson/model", "/labs", "/labs/" + w.lab} {
		browsertest.Do(t, ctx, "open "+page, chromedp.Navigate(w.lb.URL()+page))
		browsertest.WaitJS(t, ctx, "the live views of "+page, `document.readyState === "complete" && [...document.querySelectorAll(".tracer .conn, .timeline .conn, .lab-meta .conn")].every(c => c.classList.contains("live"))`)
	}
	browsertest.Do(t, ctx, "open the etcd page", chromedp.Navigate(w.lb.URL()+"/lesson/etcd"))
	browsertest.WaitJS(t, ctx, "the inspector's keys", `document.querySelectorAll("[data-keys] [data-key]").length > 0`)
	browsertest.Do(t, ctx, "open the live lab", chromedp.Navigate(w.lb.URL()+"/lab"))
	browsertest.WaitJS(t, ctx, "both lanes watching", `[...document.querySelectorAll(".event-log li")].filter(l => l.textContent.includes("WATCH")).length >= 2`)
	w.round++
	patch := `{"metadata":{"labels":{"by":"admin-` + strconv.Itoa(w.round) + `"}}}`
	if _, err := w.lb.Clientset(t).CoreV1().Pods(w.ns).Patch(context.Background(), "ssa-demo", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the admin's label: %v", err)
	}
	browsertest.WaitJS(t, ctx, "the MODIFIED on the timeline", `[...document.querySelectorAll(".event-log li")].some(l => l.textContent.includes("MODIFIED pod/ssa-demo"))`)
	time.Sleep(time.Second) // let the lab service look at what happened
	w.u.post(labhttp.APIPath+"/"+w.lab+"/check", "")
}

// actions are the student's own ways of doing each step.
func (w *walk) actions() map[string]func() {
	pods := "/api/v1/namespaces/" + w.ns + "/pods"
	return map[string]func(){
		// watch
		"watch-pods": func() {
			w.seen = listRV(w.t, w.kubectl("get", "--raw", pods))
			w.kubectl("get", "--raw", pods+"?watch=1&timeoutSeconds=1")
		},
		"modify": func() { w.kubectl("-n", w.ns, "label", "pod", "ssa-demo", "demo-round=walk-"+w.lab, "--overwrite") },
		// Replays the change from before it, on a watch of the student's.
		"see-modified": func() { w.kubectl("get", "--raw", pods+"?watch=1&timeoutSeconds=1&resourceVersion="+w.seen) },
		// bookmarks
		"list-rv": func() { w.seen = listRV(w.t, w.kubectl("get", "--raw", pods)) },
		"bookmark": func() {
			w.seen = bookmarkRV(w.t, w.kubectl("get", "--raw", pods+"?watch=1&timeoutSeconds=3&allowWatchBookmarks=true"))
		},
		"bookmark-rv": func() { w.answer("bookmark-rv", w.seen) },
		"resume":      func() { w.kubectl("get", "--raw", pods+"?watch=1&timeoutSeconds=1&resourceVersion="+w.seen) },
		// gone
		"window": func() {
			w.kubectl("-n", w.ns, "label", "pod", "ssa-demo", "round=walk", "--overwrite")
			time.Sleep(windowFreshness)
			// The timeline's button, pressed: watcher B stopped where the lab began.
			if resp, body := w.u.inBrowser().pushWindow(w.rev); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"passed":true`) {
				w.t.Fatalf("push: HTTP %d: %s", resp.StatusCode, body)
			}
		},
		"gone": func() {
			w.seen = w.kubectl("get", "--raw", pods+"?watch=1&timeoutSeconds=2&resourceVersion="+strconv.FormatInt(w.rev, 10))
		},
		"window-start": func() {
			m := regexp.MustCompile(`too old resource version: \d+ \((\d+)\)`).FindStringSubmatch(w.seen)
			if m == nil {
				w.t.Fatalf("no 410 in %s", w.seen)
			}
			w.answer("window-start", m[1])
		},
		"relist": func() { w.kubectl("get", "--raw", pods) },
		// etcd
		"read-key": func() { w.u.inBrowser().get("/ui/etcd/value?key=/registry/pods/" + w.ns + "/ssa-demo") },
		"prefix":   func() { w.answer("prefix", `k8s\x00`) },
		"mod-revision": func() {
			_, body := w.u.inBrowser().get("/ui/etcd/value?key=/registry/pods/" + w.ns + "/ssa-demo")
			m := regexp.MustCompile(`"modRevision":(\d+)`).FindStringSubmatch(body)
			if m == nil {
				w.t.Fatalf("no modRevision in %s", body)
			}
			w.answer("mod-revision", m[1])
		},
		"why-not": func() { w.answer("why-not", "skips") },
		// discovery
		"groups":  func() { w.kubectl("get", "--raw", "/apis") },
		"openapi": func() { w.kubectl("explain", "pod.spec.containers.image") },
		// extend
		"metrics": func() { w.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1") },
		"custom-resource": func() {
			note := filepath.Join(w.t.TempDir(), "note.json")
			os.WriteFile(note, []byte(`{"apiVersion": "lab.example.com/v1", "kind": "Note", "metadata": {"name": "hello"}, "spec": {"text": "stored as JSON"}}`), 0o600)
			w.kubectl("-n", w.ns, "create", "-f", note)
		},
		"json-beside-protobuf": func() {
			w.u.inBrowser().get("/ui/etcd/value?key=/registry/lab.example.com/notes/" + w.ns + "/hello")
			w.u.inBrowser().get("/ui/etcd/value?key=/registry/pods/" + w.ns + "/ssa-demo")
		},
		"where": func() { w.answer("where", "crd-here") },
		// pipeline
		"mutate": func() { w.kubectl("-n", w.ns, "run", "lab-pod", "--image=nginx:1.27") },
		"deny": func() {
			if _, stderr, err := w.u.kubectl("-n", "kube-system", "get", "pods"); err == nil || !strings.Contains(stderr, "forbidden") {
				w.t.Fatalf("kube-system was not forbidden: %v %s", err, stderr)
			}
		},
	}
}

func (w *walk) kubectl(args ...string) string {
	w.t.Helper()
	out, stderr, err := w.u.kubectl(args...)
	if err != nil {
		w.t.Fatalf("kubectl %v: %v %s", args, err, stderr)
	}
	return out
}

func (w *walk) answer(step, answer string) {
	w.t.Helper()
	if _, body := w.u.post(labhttp.APIPath+"/"+w.lab+"/steps/"+step+"/answer", `{"answer":"`+strings.ReplaceAll(answer, `\`, `\\`)+`"}`); !strings.Contains(body, `"correct":true`) {
		w.t.Fatalf("answer %q to %s: %s", answer, step, body)
	}
}

// listRV is a raw list's resourceVersion.
func listRV(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`"resourceVersion":"(\d+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no resourceVersion in %s", out)
	}
	return m[1]
}

// etcdRevision is etcd's revision now.
func etcdRevision(t *testing.T, lb *kubelabtest.Lab) int64 {
	t.Helper()
	resp, err := lb.EtcdClient().Get(context.Background(), "/registry/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
