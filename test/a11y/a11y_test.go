// Package a11y runs axe-core on every page kubelab serves, in local mode
// and in a class (sign-in, the instructor's dashboard and drill-down, quiz
// results), in both themes, both languages, at desktop and phone widths,
// and fails on any serious or critical violation, on a page in the wrong
// language, and on a phone's page that scrolls sideways.
//
// KUBELAB_A11Y_SCREENSHOTS=DIR keeps a full-page screenshot of every page
// in every variant in DIR, to look at.
package a11y

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
)

// browserBudget bounds each test's work in the browser: axe-core on every
// page in both languages, both themes and two widths is a few hundred
// checks, which took 251 s on two cores busy with other tests, past the
// three minutes other browser tests get.
const browserBudget = 10 * time.Minute

// sections are where the crawl starts; it follows the links between them.
var sections = []string{"/lesson/", "/lab", "/labs", "/quiz", "/terminal"}

// TestEveryPage crawls the site from its sections (every lesson page, lab
// and quiz is linked from one), adds a result of each quiz, then checks
// each page in every variant.
func TestEveryPage(t *testing.T) {
	t.Parallel()
	ctx := browsertest.StartFor(t, browserBudget)
	// Results that show the answers, the most a result page draws.
	lab := kubelabtest.Start(t, func(c *server.Config) { c.QuizAttempts = 0; c.QuizReveal = string(quiz.RevealAfterSubmit) })
	pages := crawl(t, lab.URL())
	pages = append(pages, "/no-such-page")
	for _, q := range quiz.Lesson().Quizzes() {
		pages = append(pages, submitQuiz(t, ctx, lab.URL(), q.ID))
	}
	t.Logf("%d pages: %s", len(pages), strings.Join(pages, " "))

	var failures []string
	for _, lang := range []string{"en", "th"} {
		browsertest.Do(t, ctx, "the language", chromedp.Navigate(lab.URL()+"/lang?to="+lang))
		for _, p := range pages {
			browsertest.Do(t, ctx, "open "+p, chromedp.Navigate(lab.URL()+p))
			failures = append(failures, checkVariants(t, ctx, p, lang, func(v variant) []string {
				var bad []string
				if p == "/lesson/gone" && lang == "th" && v.width == 390 {
					// Thai on a phone: the navigation's words whole in their
					// pills, the web font's Thai glyphs.
					browsertest.Eval[bool](t, ctx, `(scrollTo(0, 0), true)`)
					browsertest.Shot(t, ctx, "lesson-th-phone-"+v.theme)
					if !browsertest.Eval[bool](t, ctx, `document.fonts.check("16px 'Noto Sans Thai'", "บทเรียน")`) {
						bad = append(bad, p+" [th]: the Thai web font is not loaded")
					}
				}
				if p == "/quiz/spot-the-bug" && lang == "en" {
					// The page the issue was about: its code on a phone, in both themes.
					browsertest.ScrollTo(t, ctx, "table.code")
					browsertest.Shot(t, ctx, fmt.Sprintf("spot-the-bug-%s-%d", v.theme, v.width))
				}
				return bad
			})...)
		}
	}
	report(t, failures)
}

// submitQuiz answers the quiz in the browser, partly and partly wrong so
// that its result draws every verdict, and returns the result's path.
func submitQuiz(t *testing.T, ctx context.Context, base, id string) string {
	t.Helper()
	browsertest.Do(t, ctx, "open the quiz "+id, chromedp.Navigate(base+"/quiz/"+id))
	browsertest.WaitJS(t, ctx, "the form of "+id, `document.querySelector("form input[name=attempt]") !== null`)
	// The first option of every question but the last; a mark on the
	// first two lines of a script.
	browsertest.Eval[bool](t, ctx, `(() => {
		const sets = [...document.querySelectorAll("form fieldset")];
		sets.slice(0, Math.max(1, sets.length - 1)).forEach(f => f.querySelector("input[type=radio]")?.click());
		[...document.querySelectorAll("form details.line-marks")].slice(0, 2).forEach(d => d.querySelector("input[type=checkbox]").click());
		return true })()`)
	browsertest.Do(t, ctx, "submit "+id, browsertest.Press(`form input[name=attempt] ~ button[type=submit]`))
	browsertest.WaitJS(t, ctx, "the result of "+id, `location.pathname.includes("/attempts/") && document.readyState === "complete" && document.querySelector("section.result") !== null`)
	return browsertest.Eval[string](t, ctx, `location.pathname`)
}

// crawl lists the site's pages: the sections and every page they link to
// under them, once each. It reads the pages as served, which is quicker
// than loading each in the browser: every link between pages is in them.
func crawl(t *testing.T, base string) []string {
	t.Helper()
	href := regexp.MustCompile(`href="(/[^"#?]*)`)
	seen := slices.Clone(sections)
	for i := 0; i < len(seen) && i < 60; i++ {
		req, err := http.NewRequest(http.MethodGet, base+seen[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/html")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("read %s: %v", seen[i], err)
		}
		for _, m := range href.FindAllSubmatch(page, -1) {
			p := html.UnescapeString(string(m[1]))
			if !slices.ContainsFunc(sections, func(s string) bool { return strings.HasPrefix(p, strings.TrimSuffix(s, "/")) }) || slices.Contains(seen, p) {
				continue
			}
			seen = append(seen, p)
		}
	}
	return seen
}
