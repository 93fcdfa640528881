package terminal_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// screenText is what the terminal's screen shows now (xterm.js draws
// spaces as no-break spaces). xterm.js paints only while the terminal is
// in view, and the live views above it grow as requests arrive: it is
// brought into view first.
// With several tabs, it is the tab shown's screen.
const screenText = `(document.querySelector("[data-terminal] .term-screen").scrollIntoView({block: "nearest"}), ` +
	`document.querySelector("[data-terminal] .term-panel:not([hidden]) .xterm-rows").innerText.replace(/\u00a0/g, " "))`

// textarea is where the shown tab's xterm.js takes the keyboard.
const textarea = `[data-terminal] .term-panel:not([hidden]) .xterm-helper-textarea`

// typeLine enters a line into the terminal as a keyboard's input method
// does (chromedp's key events would type each character twice, as a key
// down with its text and again as a char), then presses Enter.
func typeLine(t *testing.T, ctx context.Context, line string) {
	t.Helper()
	browsertest.Do(t, ctx, "focus the terminal", chromedp.Focus(chromedp.CSS(textarea)))
	if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: line}); err != nil {
		t.Fatalf("type %s: %v", line, err)
	}
	// The screen may wrap the line: its rows are read joined.
	browsertest.WaitJS(t, ctx, "the line typed", screenText+`.replace(/\n/g, "").includes(`+strconv.Quote("$ "+line)+`)`)
	browsertest.Do(t, ctx, "Enter", chromedp.KeyEvent("\r"))
}

// waitReady waits for the terminal to be connected and idle, and says
// where it stopped if it is not.
func waitReady(t *testing.T, ctx context.Context) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		if browsertest.Eval[bool](t, ctx, `(document.querySelector("[data-terminal]")?.dataset.state ?? "") === "ready"`) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	browsertest.Shot(t, ctx, "failed-terminal-ready")
	t.Fatalf("the terminal is not ready: %s", browsertest.Eval[string](t, ctx, `JSON.stringify({
		url: location.href, state: document.querySelector("[data-terminal]")?.dataset.state,
		status: document.querySelector("[data-status]")?.textContent, xterm: typeof window.Terminal, fit: typeof window.FitAddon,
		resources: performance.getEntriesByType("resource").map(e => e.name.replace(location.origin, "") + " " + Math.round(e.duration) + "ms " + e.responseStatus)})`))
}

// TestBrowserWatchesAndInterrupts is the terminal's promise end to end: a
// student signed in to a class runs kubectl get pods -w in the page's
// terminal, sees the MODIFIED another client's label causes, and stops
// the watch with Ctrl-C.
func TestBrowserWatchesAndInterrupts(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.SecureListen = "127.0.0.1:0"
		c.JoinCode = "k8s-101"
	})
	browsertest.Do(t, ctx, "open the terminal", chromedp.Navigate(lab.URL()+"/terminal"))
	browsertest.WaitJS(t, ctx, "the sign-in page", `location.pathname === "/signin"`)
	browsertest.Submit(t, ctx, "join", "/terminal",
		browsertest.Fill(`#name`, "Ada"),
		browsertest.Fill(`#code`, "k8s-101"),
		browsertest.Press(`form[action="/signin"] button`))
	waitReady(t, ctx)
	who := browsertest.Eval[string](t, ctx, `document.querySelector("[data-who]").textContent`)
	if !strings.Contains(who, "ada") {
		t.Fatalf("the terminal says it runs as %q", who)
	}

	// Another client (the instructor's kubectl, here client-go as admin)
	// labels the student's pod.
	label := func(value string) {
		t.Helper()
		patch := []byte(`{"metadata":{"labels":{"demo-round":"` + value + `"}}}`)
		if _, err := lab.Clientset(t).CoreV1().Pods("ada").Patch(context.Background(), "ssa-demo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctrlC := func() {
		t.Helper()
		browsertest.Do(t, ctx, "Ctrl-C",
			chromedp.Focus(chromedp.CSS(textarea)),
			chromedp.KeyEvent("c", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		browsertest.WaitJS(t, ctx, "the watch stopped", `document.querySelector("[data-terminal]").dataset.state === "ready" && `+screenText+`.trimEnd().endsWith("^C\n$")`)
	}
	rows := screenText + `.split("\n").filter(l => /^(MODIFIED +)?ssa-demo /.test(l)).length`

	// kubectl get pods -w prints the pod's row again for the MODIFIED.
	typeLine(t, ctx, "kubectl get pods -w")
	browsertest.WaitJS(t, ctx, "the watch's list", rows+` === 1`)
	if state := browsertest.Eval[string](t, ctx, `document.querySelector("[data-terminal]").dataset.state`); state != "running" {
		t.Fatalf("state %q while the watch runs", state)
	}
	label("from-another-client")
	browsertest.WaitJS(t, ctx, "the MODIFIED row", rows+` === 2`)
	ctrlC()

	// With --output-watch-events it says so.
	typeLine(t, ctx, "kubectl get pods -w --output-watch-events")
	browsertest.WaitJS(t, ctx, "the watch's first event", screenText+`.includes("ADDED      ssa-demo")`)
	if browsertest.Eval[bool](t, ctx, screenText+`.includes("MODIFIED")`) {
		t.Fatal("MODIFIED before anything was modified")
	}
	label("again")
	browsertest.WaitJS(t, ctx, "the MODIFIED event", screenText+`.includes("MODIFIED   ssa-demo")`)
	browsertest.Shot(t, ctx, "terminal-watch")
	ctrlC()

	// The terminal is usable after it: history brings the line back.
	browsertest.Do(t, ctx, "Up", chromedp.KeyEvent(kb.ArrowUp))
	browsertest.WaitJS(t, ctx, "the line from history", screenText+`.trimEnd().endsWith("$ kubectl get pods -w --output-watch-events")`)
}

// TestBrowserTerminalScreenshots keeps the terminal page in both themes
// and languages, at desktop and phone widths, after a command, to look at.
func TestBrowserTerminalScreenshots(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t)
	for _, width := range []int64{1280, 390} {
		for _, lang := range []string{"en", "th"} {
			for _, theme := range []string{"light", "dark"} {
				name := "terminal-" + lang + "-" + theme + "-" + map[int64]string{1280: "desktop", 390: "phone"}[width]
				height := int64(900)
				if width < 600 {
					height = 844
				}
				browsertest.Do(t, ctx, name,
					chromedp.EmulateViewport(width, height),
					chromedp.Navigate(lab.URL()+"/lang?to="+url.QueryEscape(lang)))
				browsertest.Eval[bool](t, ctx, `(localStorage.setItem("kubelab-theme", "`+theme+`"), true)`)
				browsertest.Do(t, ctx, name, chromedp.Navigate(lab.URL()+"/terminal"))
				waitReady(t, ctx)
				typeLine(t, ctx, "kubectl get pods")
				browsertest.WaitJS(t, ctx, "the pods", screenText+`.includes("ssa-demo") && document.querySelector("[data-terminal]").dataset.state === "ready"`)
				time.Sleep(200 * time.Millisecond) // the cursor's blink and the last repaint
				browsertest.Shot(t, ctx, name)
				if theme == "light" {
					browsertest.ScrollTo(t, ctx, ".own-kubectl")
					browsertest.Shot(t, ctx, name+"-own-kubectl")
				}
			}
		}
	}
}

// TestBrowserDockOnLessonPage: the lesson page carries the terminal
// folded, without xterm.js; opened, it loads it and runs commands.
func TestBrowserDockOnLessonPage(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t)
	browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(lab.URL()+"/lesson/request-path"))
	browsertest.WaitJS(t, ctx, "the dock", `document.querySelector("[data-terminal-dock]") !== null`)
	if browsertest.Eval[bool](t, ctx, `document.querySelector("[data-terminal-dock]").open || typeof window.Terminal !== "undefined"`) {
		t.Fatal("the lesson page loaded the terminal before the reader opened it")
	}
	browsertest.ScrollTo(t, ctx, "[data-terminal-dock]")
	browsertest.Do(t, ctx, "open the dock", browsertest.Press(`[data-terminal-dock] > summary`))
	waitReady(t, ctx)
	typeLine(t, ctx, "kubectl get pods ssa-demo")
	browsertest.WaitJS(t, ctx, "the pod", screenText+`.includes("ssa-demo   ") && document.querySelector("[data-terminal]").dataset.state === "ready"`)
	browsertest.ScrollTo(t, ctx, "[data-terminal-dock]")
	browsertest.Shot(t, ctx, "lesson-dock")

	// Tab completes from kubectl's own completion: a resource type, then
	// a pod's name.
	browsertest.Do(t, ctx, "focus", chromedp.Focus(chromedp.CSS(textarea)))
	if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: "kubectl get podtem"}); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "Tab", chromedp.KeyEvent(kb.Tab))
	browsertest.WaitJS(t, ctx, "the type completed", screenText+`.includes("$ kubectl get podtemplates ")`)
	browsertest.Do(t, ctx, "clear the line", chromedp.KeyEvent("u", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: "kubectl describe pod ssa-d"}); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "Tab", chromedp.KeyEvent(kb.Tab))
	browsertest.WaitJS(t, ctx, "the name completed", screenText+`.includes("$ kubectl describe pod ssa-demo ")`)
}
