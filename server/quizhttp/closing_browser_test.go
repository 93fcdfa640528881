package quizhttp_test

import (
	"net/url"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
)

// TestBrowserInstructorClosesAQuiz: signed in to the class dashboard, the
// instructor finds "Close this quiz" under each quiz on /quiz, with what it
// does, and closing one says so on the page, in English light on a desktop
// and Thai dark on a phone, with no page error and axe-core clean.
func TestBrowserInstructorClosesAQuiz(t *testing.T) {
	t.Parallel()
	const token = "instructor-token-closes-quiz-0123"
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom, c.JoinCode, c.SecureListen, c.InstructorToken = true, "k8s-101", "127.0.0.1:0", token
		c.QuizReveal = string(quiz.RevealAfterClose)
	})
	if err := os.MkdirAll("testdata/screenshots", 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.Start(t)
	errs := browsertest.PageErrors(t, ctx)
	browsertest.SignInToDashboard(t, ctx, lab.URL(), token)

	for _, v := range []struct {
		lang, theme, device string
		width, height       int64
		close               string
	}{
		{"en", "light", "desktop", 1280, 900, quiz.WatchQuizID},
		{"th", "dark", "phone", 390, 844, quiz.SpotTheBugQuizID},
	} {
		name := "quiz-close-" + v.lang + "-" + v.theme + "-" + v.device
		browsertest.Do(t, ctx, name, chromedp.EmulateViewport(v.width, v.height), chromedp.Navigate(lab.URL()+"/lang?to="+url.QueryEscape(v.lang)))
		browsertest.Eval[bool](t, ctx, `(localStorage.setItem("kubelab-theme", "`+v.theme+`"), true)`)
		browsertest.Do(t, ctx, name, chromedp.Navigate(lab.URL()+"/quiz"))
		form := `details.quiz-close form[action^="/quiz/` + v.close + `/close"]`
		browsertest.WaitJS(t, ctx, "the close button", `document.querySelector(`+jsString(form)+`) !== null`)
		browsertest.Eval[bool](t, ctx, `(document.querySelector(`+jsString(form)+`).closest("details").open = true, true)`)
		if v.device == "phone" {
			browsertest.ScrollTo(t, ctx, form)
		}
		browsertest.Shot(t, ctx, name)
		browsertest.NoWiderThan(t, ctx, name, int(v.width))
		if bad := browsertest.Axe(t, ctx); len(bad) > 0 {
			t.Errorf("%s: axe-core: %v", name, bad)
		}
		browsertest.Submit(t, ctx, "close the quiz", "/quiz", browsertest.Press(form+` button[type=submit]`))
		browsertest.WaitJS(t, ctx, "the quiz closed", `document.querySelector(".quiz-closed") !== null && document.querySelector(`+jsString(form)+`) === null`)
		if v.device == "phone" {
			browsertest.ScrollTo(t, ctx, ".quiz-closed")
		}
		browsertest.Shot(t, ctx, "quiz-closed-"+v.lang+"-"+v.theme+"-"+v.device)
	}
	if e := errs(); len(e) > 0 {
		t.Errorf("the pages logged errors: %q", e)
	}
}
