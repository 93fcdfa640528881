// Package browsertest drives headless Chromium for the web pages' tests:
// a fresh browser per test, steps that keep a screenshot when they fail,
// and waits that survive the page being replaced by the next one.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Start starts headless Chromium (Debian's chromium, or KUBELAB_CHROMIUM)
// with a fresh profile. Without one the test skips, except in CI
// (CI=true), where it fails. Everything the test does in it must end
// within three minutes, so that a page that never answers fails the test
// rather than holding the run up.
func Start(t *testing.T) context.Context {
	t.Helper()
	return StartFor(t, 3*time.Minute)
}

// StartFor is Start for a test that does more in the browser than three
// minutes allow on a loaded machine: budget bounds all of it.
func StartFor(t *testing.T, budget time.Duration) context.Context {
	t.Helper()
	path := os.Getenv("KUBELAB_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium: install it (apt-get install -y chromium) or set KUBELAB_CHROMIUM")
		}
		t.Skip("no chromium; the browser tests need it (they fail instead of skipping when CI=true)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, budget)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// Do runs the steps; a failure keeps a screenshot and ends the test.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		Shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
}

// Submit runs the steps that send a form, and returns once the page the
// form leads to (path) has replaced the one it was sent from: a wait on
// the new page that began before it would find the old one, or fail as
// the old one unloads.
// The step that sends the form is a Press.
func Submit(t *testing.T, ctx context.Context, what, path string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, submitWithin)
	defer cancel()
	_, err := chromedp.Run(wctx, chromedp.WaitEvent(page.FrameNavigated, func(ev page.EventFrameNavigated) bool {
		u, err := url.Parse(ev.Frame.URL)
		return ev.Frame.ParentID == "" && err == nil && u.Path == path
	}, chromedp.Steps(steps...)))
	if err != nil {
		Shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s, then the page at %s: %v (the browser is at %s)", what, path, err, whereIs(ctx))
	}
}

// Press clicks the first element the selector finds, by script, once it
// is there and enabled. chromedp's Click finds the element in its copy of
// the DOM, then clicks where the element was: on a live page that moves
// it in between, or a copy still of the page before, the click is lost and
// a Submit waits for a page that never comes.
func Press(selector string) chromedp.Action[chromedp.Void] {
	expr := `(() => { const e = document.querySelector(` + strconv.Quote(selector) + `); if (!e || e.disabled) return false; e.click(); return true })()`
	return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Void{}, until(ctx, expr, pressWithin)
	}
}

// Fill sets the value of the first form field the selector finds, by
// script, once it is there and enabled, and tells the page's scripts with
// input and change events. chromedp's SetValue acts on a node of its copy
// of the DOM: just after a form's answer replaced the page (a refused
// sign-in shown again), that copy can still be the page before, and the
// node is gone ("No node with given id found").
func Fill(selector, value string) chromedp.Action[chromedp.Void] {
	v, _ := json.Marshal(value)
	expr := `(() => { const e = document.querySelector(` + strconv.Quote(selector) + `); if (!e || e.disabled) return false; ` +
		`e.value = ` + string(v) + `; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`
	return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Void{}, until(ctx, expr, pressWithin)
	}
}

// pressWithin, waitWithin and submitWithin bound how long Press looks for
// its element, WaitJS for its condition and Submit for the page a form
// leads to. They are bounds against a page that never comes, not
// expectations: a sign-in in a class waits up to 30 s for the student's
// quota and RoleBinding to take effect, and a server under the race
// detector on a loaded CI machine has taken over 20 s to answer one. A
// test's whole budget (Start) still bounds them all.
const (
	pressWithin  = 30 * time.Second
	waitWithin   = 60 * time.Second
	submitWithin = 60 * time.Second
)

// until evaluates expr from here every 50 ms until it is true, for at
// most within. chromedp's Poll runs its loop in the page, on the page's
// timers: with the page's scripts off (a test of the pages without
// JavaScript) they never fire, and a condition not yet true at the first
// look waited until the test's whole budget ran out. Evaluated from here,
// an expression also meets the moments a page is being replaced by the
// next (no document yet, or a context gone): a falsy value, an exception
// or a lost context each mean "not yet", and the last of them is reported
// if the condition never holds.
func until(ctx context.Context, expr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	// Coerced to a bool, as Poll takes any falsy value for "not yet": an
	// optional chain on an element not there yet is undefined.
	expr = "!!(" + expr + ")"
	var last error
	for {
		once, cancelOnce := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(once, chromedp.Evaluate[bool](expr))
		cancelOnce()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// whereIs says which page the browser shows, and its heading, for a
// failure's message.
func whereIs(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	where, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + location.search + " (" + (document.querySelector("h1")?.textContent.trim() ?? "no heading") + ")"`))
	if err != nil {
		return "unknown: " + err.Error()
	}
	return where
}

// WaitJS waits until a JavaScript expression is true.
func WaitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if err := until(ctx, expr, waitWithin); err != nil {
		Shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// Eval evaluates a JavaScript expression on the page.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// ScrollTo brings the element to the top of the viewport, below the
// sticky top bar (two rows high on a phone), by script: the page may have
// navigated since chromedp last looked at its DOM.
func ScrollTo(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	Eval[bool](t, ctx, `(document.querySelector(`+strconv.Quote(selector)+`).scrollIntoView({block: "start"}), window.scrollBy(0, -(document.querySelector(".topbar")?.offsetHeight ?? 60) - 10), true)`)
}

// Shot keeps a screenshot of the viewport under the test package's
// testdata/screenshots (a failing step's is named failed-*, not kept in git).
func Shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	keep(t, ctx, name, chromedp.CaptureScreenshot())
}

// ShotPage is Shot of the whole page, top to bottom, for a page whose
// every part is to be looked at.
func ShotPage(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	keep(t, ctx, name, chromedp.FullScreenshot(100))
}

func keep(t *testing.T, ctx context.Context, name string, capture chromedp.Action[[]byte]) {
	t.Helper()
	b, err := chromedp.Run(ctx, capture)
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join("testdata", "screenshots", name+".png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

// SignInToDashboard opens the class dashboard at base (a kubelab's URL)
// and signs in there with the instructor's token, as an instructor does:
// the browser then holds the instructor's session.
func SignInToDashboard(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	Do(t, ctx, "open the dashboard", chromedp.Navigate(base+"/labs/dashboard"))
	WaitJS(t, ctx, "the dashboard's sign-in form", `document.querySelector("input[name=token]") !== null`)
	Submit(t, ctx, "sign in with the instructor's token", "/labs/dashboard",
		Fill(`input[name=token]`, token),
		Press(`form[action^="/labs/dashboard/signin"] button`))
}
