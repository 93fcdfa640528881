package terminal_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// insert types text into the shown tab as an input method does.
func insert(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	browsertest.Do(t, ctx, "focus the terminal", chromedp.Focus(chromedp.CSS(textarea)))
	if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
		t.Fatalf("type %q: %v", text, err)
	}
}

// press presses a key n times, with modifiers.
func press(t *testing.T, ctx context.Context, key string, n int, opts ...chromedp.KeyOption) {
	t.Helper()
	for range n {
		browsertest.Do(t, ctx, "key "+strconv.Quote(key), chromedp.KeyEvent(key, opts...))
	}
}

// paste pastes text into the shown tab as the clipboard does.
func paste(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	v, _ := json.Marshal(text)
	browsertest.Eval[bool](t, ctx, `(() => { const dt = new DataTransfer(); dt.setData("text/plain", `+string(v)+`); `+
		`document.querySelector(`+strconv.Quote(textarea)+`).dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true})); return true })()`)
}

// promptRows counts the rows of the shown tab that begin with a prompt.
const promptRows = screenText + `.split("\n").filter(r => r.startsWith("$ ")).length`

// lineFrom is the text of the rows from the last that begins with the
// prompt and prefix to the screen's end, joined: a long line as the
// screen wrapped it, read back whole.
func lineFrom(prefix string) string {
	return `(() => { const rows = ` + screenText + `.split("\n").map(r => r.trimEnd()); ` +
		`const i = rows.findLastIndex(r => r.startsWith(` + strconv.Quote("$ "+prefix) + `)); return i < 0 ? "" : rows.slice(i).join("") })()`
}

func noPageErrors(t *testing.T, errs func() []string) {
	t.Helper()
	if e := errs(); len(e) > 0 {
		t.Errorf("the page threw or logged %d errors: %s", len(e), strings.Join(e, "\n"))
	}
}

// TestBrowserLineEditing edits a line longer than the screen is wide,
// where each keystroke used to print the prompt line again, and runs what
// was edited; then Ctrl-W, and Esc then Tab out of the terminal. The page
// throws nothing on the way.
func TestBrowserLineEditing(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t)
	errs := browsertest.PageErrors(t, ctx)
	browsertest.Do(t, ctx, "open the terminal", chromedp.Navigate(lab.URL()+"/terminal"))
	waitReady(t, ctx)

	// 300 y's wrap over three rows of the desktop's screen.
	head := `kubectl get pods -o jsonpath='{.kind}{"`
	insert(t, ctx, head+strings.Repeat("y", 300)+`"}'`)
	browsertest.WaitJS(t, ctx, "the long line", lineFrom(head)+` === `+strconv.Quote("$ "+head+strings.Repeat("y", 300)+`"}'`))
	press(t, ctx, kb.ArrowLeft, 3)
	press(t, ctx, kb.Backspace, 4)
	want := head + strings.Repeat("y", 296) + `"}'`
	browsertest.WaitJS(t, ctx, "the edited line, once", lineFrom(head)+` === `+strconv.Quote("$ "+want))
	if n := browsertest.Eval[int](t, ctx, promptRows); n != 1 {
		browsertest.Shot(t, ctx, "failed-line-editing")
		t.Fatalf("%d rows begin with the prompt after editing a wrapped line, want 1:\n%s", n, browsertest.Eval[string](t, ctx, screenText))
	}
	// What ran is what the screen showed.
	press(t, ctx, "\r", 1)
	browsertest.WaitJS(t, ctx, "the edited command's output",
		screenText+`.replace(/\n/g, "").includes("List`+strings.Repeat("y", 296)+`$ ")`)
	if browsertest.Eval[bool](t, ctx, screenText+`.replace(/\n/g, "").includes("`+strings.Repeat("y", 297)+`")`) {
		t.Fatal("the command ran with the line before the edit")
	}

	// Ctrl-W takes back a word at a time, Ctrl-A and Ctrl-E go to the ends.
	insert(t, ctx, "kubectl get pods one two")
	press(t, ctx, "w", 2, chromedp.KeyModifiers(chromedp.ModifierCtrl))
	press(t, ctx, "a", 1, chromedp.KeyModifiers(chromedp.ModifierCtrl))
	insert(t, ctx, "# ")
	press(t, ctx, "e", 1, chromedp.KeyModifiers(chromedp.ModifierCtrl))
	insert(t, ctx, "three")
	browsertest.WaitJS(t, ctx, "the line after Ctrl-W, Ctrl-A and Ctrl-E", lineFrom("# kubectl")+` === "$ # kubectl get pods three"`)

	// Tab completes; Esc, then Tab, leaves the terminal for the page.
	press(t, ctx, kb.Escape, 1)
	press(t, ctx, kb.Tab, 1)
	browsertest.WaitJS(t, ctx, "the focus on the page", `document.activeElement !== document.querySelector(`+strconv.Quote(textarea)+`) && document.activeElement !== document.body`)
	if !browsertest.Eval[bool](t, ctx, `document.querySelector("[data-terminal]").contains(document.activeElement) || document.activeElement.closest("main") !== null`) {
		t.Fatalf("Esc, Tab went to %s", browsertest.Eval[string](t, ctx, `document.activeElement.outerHTML.slice(0, 120)`))
	}
	noPageErrors(t, errs)
}

// TestBrowserShellTabsAndPaste is the watch lab done as the issue asks, in
// the page's own terminal with its shell: a watch in one tab, the step's
// $(date +%s) command pasted from the page into a second, where it runs as
// printed; the watch's tab then shows the MODIFIED, and the step passes. A
// heredoc pasted whole runs too.
func TestBrowserShellTabsAndPaste(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t, func(c *server.Config) { c.TerminalProcesses = true })
	errs := browsertest.PageErrors(t, ctx)
	browsertest.Do(t, ctx, "open the lab", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(lab.URL()+"/labs/watch"))
	browsertest.WaitJS(t, ctx, "the start button", `document.querySelector(".lab-start button") !== null`)
	browsertest.Submit(t, ctx, "start it", "/labs/watch", browsertest.Press(".lab-start button"))
	browsertest.WaitJS(t, ctx, "the paste buttons", `document.querySelectorAll("[data-paste-command]").length >= 2`)

	// Step 1: the watch, pasted into the first tab (the dock opens).
	browsertest.Do(t, ctx, "paste step 1", browsertest.Press(`#step-watch-pods [data-paste-command]`))
	waitReady(t, ctx)
	browsertest.WaitJS(t, ctx, "the watch on the line", screenText+`.includes("$ kubectl -n ")`)
	if !browsertest.Eval[bool](t, ctx, `document.querySelector("[data-terminal]").dataset.state === "ready"`) {
		t.Fatal("pasting ran the command")
	}
	press(t, ctx, "\r", 1)
	browsertest.WaitJS(t, ctx, "the watch's first event", screenText+`.includes("ADDED")`)

	// Step 2 in a second tab, from the page, as printed.
	browsertest.Do(t, ctx, "a new tab", browsertest.Press(`[data-newtab]`))
	browsertest.WaitJS(t, ctx, "two tabs", `document.querySelectorAll("[data-terminal] [role=tab]").length === 2 && document.querySelector("[data-terminal]").dataset.state === "ready"`)
	browsertest.Do(t, ctx, "paste step 2", browsertest.Press(`#step-modify [data-paste-command]`))
	browsertest.WaitJS(t, ctx, "step 2 on the line", screenText+`.replace(/\n/g, "").includes("demo-round=$(date +%s) --overwrite")`)
	press(t, ctx, "\r", 1)
	browsertest.WaitJS(t, ctx, "the label", screenText+`.includes("pod/ssa-demo labeled")`)
	browsertest.WaitJS(t, ctx, "step 2 passed", `document.querySelector("#step-modify").dataset.state === "passed"`)
	browsertest.ScrollTo(t, ctx, "#step-modify")
	browsertest.Shot(t, ctx, "terminal-lab-two-tabs")

	// The first tab's watch saw it, and still runs.
	browsertest.Do(t, ctx, "the first tab", browsertest.Press(`[data-terminal] [role=tab]:first-child`))
	browsertest.WaitJS(t, ctx, "the MODIFIED in the watch's tab", screenText+`.includes("MODIFIED")`)
	if state := browsertest.Eval[string](t, ctx, `document.querySelector("[data-terminal]").dataset.state`); state != "running" {
		t.Fatalf("the watch's tab is %q", state)
	}
	if v := browsertest.Axe(t, ctx); len(v) > 0 {
		t.Errorf("axe-core on the lab with two terminal tabs: %v", v)
	}

	// A heredoc pasted whole, in the second tab: its lines stay lines, and
	// Enter runs them.
	browsertest.Do(t, ctx, "the second tab", browsertest.Press(`[data-terminal] [role=tab]:nth-child(2)`))
	browsertest.WaitJS(t, ctx, "the second tab shown", `document.querySelector("[data-terminal]").dataset.state === "ready"`)
	paste(t, ctx, "kubectl create -f - <<'EOF'\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pasted\nEOF\n")
	browsertest.WaitJS(t, ctx, "the heredoc's lines", screenText+`.includes("> kind: ConfigMap") && `+screenText+`.includes("> EOF")`)
	press(t, ctx, "\r", 1)
	browsertest.WaitJS(t, ctx, "the heredoc ran", screenText+`.includes("configmap/pasted created")`)
	noPageErrors(t, errs)
}

// TestBrowserTerminalBesideTheLesson keeps, for each width, language and
// theme, the lesson with its terminal open: beside the lesson from 1024 px,
// under it on a phone, fitted to the phone's width, with a watch in one tab
// and a long line edited in another. On the phone the terminal also goes
// full screen and back.
func TestBrowserTerminalBesideTheLesson(t *testing.T) {
	t.Parallel()
	ctx := browsertest.StartFor(t, browsertestBudget)
	lab := kubelabtest.Start(t)
	errs := browsertest.PageErrors(t, ctx)
	for _, width := range []int64{1280, 390} {
		for _, lang := range []string{"en", "th"} {
			for _, theme := range []string{"light", "dark"} {
				device := map[int64]string{1280: "desktop", 390: "phone"}[width]
				name := "lesson-terminal-" + lang + "-" + theme + "-" + device
				height := map[int64]int64{1280: 900, 390: 844}[width]
				browsertest.Do(t, ctx, name, chromedp.EmulateViewport(width, height), chromedp.Navigate(lab.URL()+"/lang?to="+url.QueryEscape(lang)))
				browsertest.Eval[bool](t, ctx, `(localStorage.setItem("kubelab-theme", "`+theme+`"), localStorage.setItem("kubelab-terminal-dock", "open"), true)`)
				browsertest.Do(t, ctx, name, chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
				waitReady(t, ctx)
				typeLine(t, ctx, "kubectl get pods -w")
				browsertest.WaitJS(t, ctx, "the watch", screenText+`.includes("ssa-demo")`)
				browsertest.Do(t, ctx, "a new tab", browsertest.Press(`[data-newtab]`))
				browsertest.WaitJS(t, ctx, "the new tab ready", `document.querySelectorAll("[data-terminal] [role=tab]").length === 2 && document.querySelector("[data-terminal]").dataset.state === "ready"`)
				typeLine(t, ctx, "kubectl label pod ssa-demo demo-round="+lang+theme+" --overwrite")
				browsertest.WaitJS(t, ctx, "the label", screenText+`.includes("pod/ssa-demo labeled") && document.querySelector("[data-terminal]").dataset.state === "ready"`)
				// No spaces where the screen may wrap it: a row's last
				// space is not told apart from the row's blank end.
				head := `kubectl annotate pod ssa-demo note="`
				long := []rune(head + strings.Repeat("longline-", 14) + `edited"`)
				insert(t, ctx, string(long))
				press(t, ctx, kb.ArrowLeft, 8)
				press(t, ctx, kb.Backspace, 5)
				edited := string(append(long[:len(long)-8-5:len(long)-8-5], long[len(long)-8:]...))
				browsertest.WaitJS(t, ctx, "the edited line", lineFrom(head)+` === `+strconv.Quote("$ "+edited))
				if n := browsertest.Eval[int](t, ctx, promptRows); n != 2 {
					t.Errorf("%s: %d rows begin with the prompt, want 2 (the label, the long line)", name, n)
				}
				if width >= 1024 {
					// Side by side: the terminal right of the lesson, in view.
					if !browsertest.Eval[bool](t, ctx, `(() => { const d = document.querySelector("[data-terminal-dock]").getBoundingClientRect(), p = document.querySelector(".page-col").getBoundingClientRect(); `+
						`return d.left >= p.right && d.top < innerHeight / 2 && d.bottom > innerHeight / 2 })()`) {
						t.Errorf("%s: the terminal is not beside the lesson", name)
					}
				} else {
					// Fitted: nothing scrolls sideways.
					if !browsertest.Eval[bool](t, ctx, `(() => { const s = document.querySelector("[data-terminal] .term-screen"); return s.scrollWidth <= s.clientWidth + 1 })()`) {
						t.Errorf("%s: the terminal's screen scrolls sideways", name)
					}
				}
				browsertest.ScrollTo(t, ctx, "[data-terminal-dock]")
				browsertest.Shot(t, ctx, name)
				if width < 1024 && theme == "dark" {
					browsertest.Do(t, ctx, "full screen", browsertest.Press(`[data-full]`))
					browsertest.WaitJS(t, ctx, "the terminal over the window", `(() => { const r = document.querySelector("[data-terminal]").getBoundingClientRect(); return r.top === 0 && r.left === 0 && r.width === innerWidth })()`)
					browsertest.Shot(t, ctx, name+"-full")
					browsertest.Do(t, ctx, "leave full screen", browsertest.Press(`[data-full]`))
					browsertest.WaitJS(t, ctx, "the terminal in the page", `!document.querySelector("[data-terminal]").classList.contains("is-full")`)
				}
				browsertest.Do(t, ctx, "stop the watch", browsertest.Press(`[data-terminal] [role=tab]:first-child`), browsertest.Press(`[data-ctrlc]`))
				browsertest.WaitJS(t, ctx, "the watch stopped", `document.querySelector("[data-terminal]").dataset.state === "ready"`)
			}
		}
	}
	noPageErrors(t, errs)
}

// browsertestBudget bounds the eight variants of the lesson with its terminal.
const browsertestBudget = 6 * time.Minute
