package quizhttp_test

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
)

// TestBrowserAnswerAfterSubmitting: the lesson's "Show the answer" under
// the spot-the-bug script carries no answer until the student has
// submitted that quiz; then their result is colour-coded (right green,
// partly amber, wrong red, each with a sign), in English and Thai, and
// the lesson shows the answer. It runs on a whole kubelab that explains
// every attempt: the browser reads the lesson's pages and the site's
// styles, which other packages serve. The browser takes the quiz as the
// anonymous user: no other test on its server may.
func TestBrowserAnswerAfterSubmitting(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, revealing)
	ctx := browsertest.Start(t)
	if err := os.MkdirAll("testdata/screenshots", 0o755); err != nil {
		t.Fatal(err)
	}
	spot, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	bugText := spot.Questions[0].Bugs[0].Explanation.EN[:40]

	// Before: nothing of the answer is on the page, to a browser or to curl.
	resp, err := http.Get(lab.URL() + "/lesson/model")
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	if !strings.Contains(page, `data-quiz-answer="spot-the-bug"`) || strings.Contains(page, bugText) || strings.Contains(page, "Running is not Ready") {
		t.Fatalf("the lesson page gives the answer away before the quiz is submitted")
	}
	browsertest.Do(t, ctx, "open the lesson's spot-the-bug", chromedp.Navigate(lab.URL()+"/lesson/model#spot-the-bug"))
	browsertest.Do(t, ctx, "open Show the answer", browsertest.Press(`details[data-quiz-answer] summary`))
	browsertest.WaitJS(t, ctx, "the answer locked", `document.querySelector("details[data-quiz-answer] .quiz-answer-locked a[href='/quiz/spot-the-bug']") !== null`)
	if got := browsertest.Eval[string](t, ctx, `document.querySelector("details[data-quiz-answer]").textContent`); strings.Contains(got, bugText) {
		t.Fatalf("the answer shows before submitting: %q", got)
	}

	// Submit three of the four faults, and one wrong mark.
	browsertest.Do(t, ctx, "open the quiz", chromedp.Navigate(lab.URL()+"/quiz/"+quiz.SpotTheBugQuizID))
	mark := func(line int, reason string) string {
		o, _ := spot.Questions[0].Option(reason)
		return `(() => { const boxes = [...document.querySelectorAll('input[type=checkbox][name="line:wait-for-pod-ready:` + string(rune('0'+line)) + `"]')];
			const b = boxes.find(b => b.closest("label").textContent.trim() === ` + jsString(o.Text.EN) + `); b.checked = true; return true })()`
	}
	// Line 3 takes two marks: the poll and the missing timeout.
	for _, js := range []string{mark(4, "etcd-direct"), mark(3, "polling"), mark(3, "no-timeout"), mark(2, "await-in-loop")} {
		browsertest.Eval[bool](t, ctx, js)
	}
	browsertest.Do(t, ctx, "submit the marks", browsertest.Press(`form button[type=submit]`))
	browsertest.WaitJS(t, ctx, "the result", `location.pathname.includes("/attempts/") && document.querySelector("section.result") !== null`)
	result := browsertest.Eval[string](t, ctx, `location.pathname`)

	// colour is the computed colour of a CSS variable of the theme.
	colour := func(v string) string {
		return browsertest.Eval[string](t, ctx, `(() => { const d = document.createElement("div"); d.style.color = "var(`+v+`)"; document.body.append(d);
			const c = getComputedStyle(d).color; d.remove(); return c })()`)
	}
	style := func(selector, prop string) string {
		return browsertest.Eval[string](t, ctx, `(() => { const e = document.querySelector(`+jsString(selector)+`); return e ? getComputedStyle(e)[`+jsString(prop)+`] : "missing" })()`)
	}
	checkColours := func(lang, verdict string) {
		t.Helper()
		if got := browsertest.Eval[string](t, ctx, `document.querySelector("section.result .verdict").textContent`); !strings.Contains(got, "◐") || !strings.Contains(got, verdict) {
			t.Errorf("%s: verdict %q, want ◐ and %q", lang, got, verdict)
		}
		for _, c := range []struct{ selector, prop, want string }{
			{"section.result.is-partly", "borderLeftColor", "--warn"},
			{".verdict-mark", "color", "--warn"},
			{".bug-result.is-right", "backgroundColor", "--ok-soft"},
			{".bug-result.is-wrong", "backgroundColor", "--deny-soft"},
			{".bug-result.is-wrong", "borderLeftColor", "--deny"},
		} {
			if got, want := style(c.selector, c.prop), colour(c.want); got != want {
				t.Errorf("%s: %s %s is %s, want %s's %s", lang, c.selector, c.prop, got, c.want, want)
			}
		}
		if browsertest.Eval[int](t, ctx, `document.querySelectorAll("tr.mark-right").length`) != 2 || browsertest.Eval[int](t, ctx, `document.querySelectorAll("tr.mark-wrong").length`) != 1 {
			t.Errorf("%s: the marked lines are not coloured right and wrong", lang)
		}
	}
	checkColours("en", "Partly right")
	browsertest.ScrollTo(t, ctx, "section.result")
	browsertest.Shot(t, ctx, "result-en")
	browsertest.Do(t, ctx, "the result in Thai", chromedp.Navigate(lab.URL()+result+"?lang=th"))
	browsertest.WaitJS(t, ctx, "the Thai result", `document.documentElement.lang === "th" && document.querySelector("section.result") !== null`)
	browsertest.Do(t, ctx, "dark theme", browsertest.Press(`[data-theme-toggle]`))
	browsertest.WaitJS(t, ctx, "dark", `document.documentElement.dataset.theme === "dark"`)
	checkColours("th", "ถูกบางส่วน")
	browsertest.ScrollTo(t, ctx, "section.result")
	browsertest.Shot(t, ctx, "result-th-dark")

	// After: the lesson shows the answer, from the student's own result.
	browsertest.Do(t, ctx, "back to the lesson", chromedp.Navigate(lab.URL()+"/lesson/model?lang=en#spot-the-bug"))
	browsertest.Do(t, ctx, "light theme", browsertest.Press(`[data-theme-toggle]`))
	browsertest.WaitJS(t, ctx, "light", `document.documentElement.dataset.theme === "light"`)
	browsertest.WaitJS(t, ctx, "the answer revealed", `document.querySelector("details[data-quiz-answer]").dataset.state === "revealed"`)
	browsertest.Do(t, ctx, "open Show the answer", browsertest.Press(`details[data-quiz-answer] summary`))
	got := browsertest.Eval[string](t, ctx, `document.querySelector("details[data-quiz-answer]").textContent`)
	if !strings.Contains(got, bugText) || !strings.Contains(got, "Running is not Ready") {
		t.Errorf("the lesson does not show the answer after submitting: %q", got)
	}
	browsertest.ScrollTo(t, ctx, "details[data-quiz-answer]")
	browsertest.Shot(t, ctx, "lesson-answer-after-submitting")
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsString(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`", "${", "\\${").Replace(s) + "`"
}
