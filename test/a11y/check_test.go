package a11y

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
)

// variant is one way a reader sees a page: a width and a theme.
type variant struct {
	width int64
	theme string
}

// variants: a desktop and a 390 px phone, each in both themes.
var variants = []variant{{1280, "light"}, {1280, "dark"}, {390, "light"}, {390, "dark"}}

// liveViews is true once a page's live views are live: they first say
// "connecting", and a reader sees them once they are.
const liveViews = `document.readyState === "complete" && [...document.querySelectorAll(".tracer .conn, .timeline .conn, .lab-meta .conn")].every(c => c.classList.contains("live"))`

// shotsDir, if set (KUBELAB_A11Y_SCREENSHOTS), receives a full-page
// screenshot of every page in every variant, to look at.
var shotsDir = os.Getenv("KUBELAB_A11Y_SCREENSHOTS")

// checkVariants checks the page open in ctx in every variant, switching
// width and theme in place rather than loading the page four times (a
// load and its live views' start cost as much as axe). Each variant's extra
// checks run before axe; it returns the failures, named by page, language
// and variant.
func checkVariants(t *testing.T, ctx context.Context, name, lang string, extra func(v variant) []string) []string {
	t.Helper()
	browsertest.WaitJS(t, ctx, "the live views of "+name, liveViews)
	var failures []string
	if got := browsertest.Eval[string](t, ctx, `document.documentElement.lang`); got != lang {
		failures = append(failures, fmt.Sprintf("%s [%s]: the page is in %q", name, lang, got))
	}
	for _, v := range variants {
		where := fmt.Sprintf("%s [%s, %s, %dpx]", name, lang, v.theme, v.width)
		browsertest.Do(t, ctx, "the viewport", chromedp.EmulateViewport(v.width, 900))
		// Set as the theme toggle does, then let the page lay itself out
		// again for the new width before anything is measured.
		browsertest.Eval[bool](t, ctx, `(localStorage.setItem("kubelab-theme", "`+v.theme+`"), document.documentElement.dataset.theme = "`+v.theme+`", true)`)
		browsertest.Settle(t, ctx)
		// Reflow: nothing makes a phone scroll sideways.
		if w := browsertest.Eval[int](t, ctx, `document.documentElement.scrollWidth`); w > int(v.width) {
			failures = append(failures, fmt.Sprintf("%s: the page is %d px wide, past the edge: %s", where, w, browsertest.Eval[string](t, ctx, browsertest.Overflowing)))
		}
		if extra != nil {
			failures = append(failures, extra(v)...)
		}
		// The page's elements, names and roles are the same in either
		// theme: the second theme at a width needs only the rules that
		// read colours, which keeps the package's run short.
		var rules []string
		if v.theme != variants[0].theme {
			rules = browsertest.ColourRules
		}
		for _, f := range browsertest.Axe(t, ctx, rules...) {
			failures = append(failures, where+": "+f.String())
		}
		if shotsDir != "" {
			fullShot(t, ctx, fmt.Sprintf("%s-%s-%s-%d", fileName(name), lang, v.theme, v.width))
		}
	}
	return failures
}

// fileName is a page's name as a file's: "/labs/dashboard (student)" is
// "labs-dashboard-student".
func fileName(page string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(page), "-"), "-")
}

// fullShot keeps a screenshot of the whole page in shotsDir.
func fullShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(shotsDir, name+".png"), b, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

// report fails the test with every violation found.
func report(t *testing.T, failures []string) {
	t.Helper()
	if len(failures) > 0 {
		t.Errorf("%d serious or critical accessibility problems:\n%s", len(failures), strings.Join(failures, "\n"))
	}
}
