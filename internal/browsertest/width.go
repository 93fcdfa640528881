package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Overflowing is a JavaScript expression naming the innermost elements
// (outside any scrolling box) that stick out past the viewport's right
// edge, or whose content (a long word, say) sticks out of them: the three
// widest, each with its right edge.
const Overflowing = `(() => {
	const clips = e => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(e).overflowX);
	const scrolls = e => { for (let a = e.parentElement; a; a = a.parentElement) if (clips(a)) return true; return false };
	const out = [...document.querySelectorAll("body *")].filter(e => (e.getBoundingClientRect().right > innerWidth + 1 || (e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 && !clips(e))) && !scrolls(e));
	return out.filter(e => !out.some(o => o !== e && e.contains(o)))
		.sort((a, b) => b.getBoundingClientRect().right - a.getBoundingClientRect().right).slice(0, 3)
		.map(e => e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "") +
			" (" + Math.round(e.getBoundingClientRect().right) + "px: " + JSON.stringify(e.textContent.trim().slice(0, 40)) + ")").join(", ") })()`

// laidOut is true once the page is laid out as a reader sees it: loaded
// with its styles, its fonts in, and a frame drawn after both. Measured
// before, a page is laid out without its style sheet (a table at its
// widest) or in a fallback font, and what a test reads depends on how
// busy the machine was.
const laidOut = `document.readyState === "complete" && document.fonts.status === "loaded" &&
	[...document.querySelectorAll("link[rel=stylesheet]")].every(l => l.sheet !== null)`

// Settle waits until the page is laid out as a reader sees it, and a
// frame has been drawn since.
func Settle(t *testing.T, ctx context.Context) {
	t.Helper()
	WaitJS(t, ctx, "the page, laid out with its styles and fonts", laidOut)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("waiting for a frame: %v", err)
	}
}

// NoWiderThan fails the test if the page, once laid out, scrolls sideways
// at width (a phone's, say), and names the elements that stick out.
func NoWiderThan(t *testing.T, ctx context.Context, what string, width int) {
	t.Helper()
	Settle(t, ctx)
	if w := Eval[int](t, ctx, `document.documentElement.scrollWidth`); w > width {
		Shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-")+"-too-wide")
		t.Errorf("%s is %d px wide on a %d px screen; sticking out: %s", what, w, width, Eval[string](t, ctx, Overflowing))
	}
}
