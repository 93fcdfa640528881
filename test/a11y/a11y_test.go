// Package a11y runs axe-core on every page kubelab serves, in both themes,
// both languages, at desktop and phone widths, and fails on any serious
// or critical violation.
package a11y

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// sections are where the crawl starts; it follows the links between them.
var sections = []string{"/lesson/", "/lab", "/labs", "/quiz", "/terminal"}

// TestEveryPage crawls the site from its sections (every lesson page, lab
// and quiz is linked from one), then checks each page in every variant.
func TestEveryPage(t *testing.T) {
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t, func(c *server.Config) { c.QuizAttempts = 0 })
	pages := crawl(t, ctx, lab.URL())
	pages = append(pages, "/no-such-page")
	t.Logf("%d pages: %s", len(pages), strings.Join(pages, " "))

	var failures []string
	for _, width := range []int64{1280, 390} {
		browsertest.Do(t, ctx, "the viewport", chromedp.EmulateViewport(width, 900))
		for _, lang := range []string{"en", "th"} {
			browsertest.Do(t, ctx, "the language", chromedp.Navigate(lab.URL()+"/lang?to="+lang))
			for _, theme := range []string{"light", "dark"} {
				for _, p := range pages {
					browsertest.Do(t, ctx, "open "+p, chromedp.Navigate(lab.URL()+p))
					browsertest.Eval[bool](t, ctx, `(localStorage.setItem("kubelab-theme", "`+theme+`"), document.documentElement.dataset.theme = "`+theme+`", true)`)
					// Live views first say "connecting": check the page as a
					// reader sees it once they are live.
					browsertest.WaitJS(t, ctx, "the live views of "+p, `document.readyState === "complete" && [...document.querySelectorAll(".tracer .conn, .timeline .conn, .lab-meta .conn")].every(c => c.classList.contains("live"))`)
					if p == "/lesson/gone" && lang == "th" && width == 390 {
						// Thai on a phone: the navigation's words whole in their
						// pills, the web font's Thai glyphs.
						browsertest.Shot(t, ctx, "lesson-th-phone-"+theme)
						if w := browsertest.Eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
							failures = append(failures, fmt.Sprintf("%s [th, %s, 390px]: the page is %dpx wide", p, theme, w))
						}
						if !browsertest.Eval[bool](t, ctx, `document.fonts.check("16px 'Noto Sans Thai'", "บทเรียน")`) {
							failures = append(failures, p+" [th]: the Thai web font is not loaded")
						}
					}
					if p == "/quiz/spot-the-bug" && lang == "en" {
						// The page the issue was about: its code on a phone, in both themes.
						browsertest.ScrollTo(t, ctx, "table.code")
						browsertest.Shot(t, ctx, fmt.Sprintf("spot-the-bug-%s-%d", theme, width))
					}
					for _, v := range browsertest.Axe(t, ctx) {
						failures = append(failures, fmt.Sprintf("%s [%s, %s, %dpx]: %s", p, lang, theme, width, v))
					}
				}
			}
		}
	}
	if len(failures) > 0 {
		t.Errorf("%d serious or critical accessibility violations:\n%s", len(failures), strings.Join(failures, "\n"))
	}
}

// crawl lists the site's pages: the sections and every page they link to
// under them, once each.
func crawl(t *testing.T, ctx context.Context, base string) []string {
	seen := slices.Clone(sections)
	for i := 0; i < len(seen) && i < 60; i++ {
		browsertest.Do(t, ctx, "open "+seen[i], chromedp.Navigate(base+seen[i]))
		links := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("a[href]")].map(a => a.href)`)
		for _, l := range links {
			u, err := url.Parse(l)
			if err != nil || u.Host != strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://") {
				continue
			}
			p := u.Path
			if !slices.ContainsFunc(sections, func(s string) bool { return strings.HasPrefix(p, strings.TrimSuffix(s, "/")) }) || slices.Contains(seen, p) {
				continue
			}
			seen = append(seen, p)
		}
	}
	return seen
}
