package a11y

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
)

const (
	joinCode        = "k8s-101"
	instructorToken = "instructor-token-0123456789"
	// A Thai name as typed: the dashboard and the drill-down show it.
	thaiName = "สมชาย ใจดี"
)

// TestClassroomPages checks the pages only a class has: the sign-in page
// (and its refusal), the instructor's sign-in, dashboard and drill-down,
// and what a signed-in student sees (a lab in progress, a quiz result, the
// dashboard refused). A student joins through the real form, passes a
// step and submits a quiz first, so that the instructor's pages have
// something to show.
func TestClassroomPages(t *testing.T) {
	t.Parallel()
	ctx := browsertest.StartFor(t, browserBudget)
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.SecureListen = "127.0.0.1:0"
		c.ClassName = "k8s-101"
		c.JoinCode = joinCode
		c.InstructorToken = instructorToken
		c.GraderToken = "grader-token-9876543210"
		// A student who stops for a second is stuck: the dashboard's
		// warning row and pill are checked too.
		c.StuckAfter = time.Second
	})
	base := lab.URL()
	// The browser runs before other contexts can be made in it.
	browsertest.Do(t, ctx, "start the browser", chromedp.Navigate("about:blank"))
	// Everyone in a browser of their own (their own cookies): the
	// anonymous visitor, the student, the instructor.
	anon, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	student, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	instructor := ctx

	joinAndWork(t, student, base)
	result := browsertest.Eval[string](t, student, `location.pathname`)
	// A second student who joined and has not started: attendance.
	if _, _, err := lab.Class().Join(context.Background(), "Ada Lovelace", joinCode, ""); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, instructor, "open the dashboard", chromedp.Navigate(base+"/labs/dashboard"))
	browsertest.Submit(t, instructor, "sign in with the instructor's token", "/labs/dashboard",
		browsertest.Fill(`input[name=token]`, instructorToken),
		browsertest.Press(`form[action^="/labs/dashboard/signin"] button`))
	row := `[...document.querySelectorAll("tr[data-user]")].find(r => r.querySelector("[data-display-name]")?.textContent === "` + thaiName + `")`
	browsertest.WaitJS(t, instructor, "her row, stuck, with her score", row+`?.classList.contains("stuck") && `+row+`.querySelector("[data-quiz]") !== null`)
	drill := browsertest.Eval[string](t, instructor, row+`.querySelector("a.who").pathname`)

	var failures []string
	for _, lang := range []string{"en", "th"} {
		for _, c := range []context.Context{anon, student, instructor} {
			browsertest.Do(t, c, "the language", chromedp.Navigate(base+"/lang?to="+lang))
		}
		check := func(c context.Context, name string) {
			failures = append(failures, checkVariants(t, c, name, lang, nil)...)
		}

		browsertest.Do(t, anon, "open the sign-in page", chromedp.Navigate(base+"/signin"))
		browsertest.WaitJS(t, anon, "the sign-in form", `document.querySelector("form[action='/signin'] #code") !== null`)
		check(anon, "/signin")
		browsertest.Submit(t, anon, "a wrong join code", "/signin",
			browsertest.Fill(`#name`, thaiName),
			browsertest.Fill(`#code`, "guess"),
			browsertest.Press(`form[action="/signin"] button`))
		browsertest.WaitJS(t, anon, "the join code refused", `document.querySelector("#signin-error") !== null`)
		check(anon, "/signin (refused)")
		browsertest.Do(t, anon, "open the dashboard", chromedp.Navigate(base+"/labs/dashboard"))
		browsertest.Submit(t, anon, "a wrong instructor token", "/labs/dashboard/signin",
			browsertest.Fill(`input[name=token]`, "not-the-instructor-token"),
			browsertest.Press(`form[action^="/labs/dashboard/signin"] button`))
		browsertest.WaitJS(t, anon, "the token refused", `document.querySelector(".signin-error") !== null && document.querySelector("input[name=token]") !== null`)
		check(anon, "/labs/dashboard (sign-in refused)")

		browsertest.Do(t, student, "open her lab", chromedp.Navigate(base+"/labs/discovery"))
		browsertest.WaitJS(t, student, "her lab, signed in", `document.querySelector('li[data-step="groups"]')?.dataset.state === "passed" && document.querySelector("[data-account]")?.hidden === false`)
		check(student, "/labs/discovery (student)")
		browsertest.Do(t, student, "open her result", chromedp.Navigate(base+result))
		browsertest.WaitJS(t, student, "her result", `document.querySelector("section.result") !== null`)
		check(student, "/quiz/.../attempts/... (student)")
		browsertest.Do(t, student, "open the dashboard", chromedp.Navigate(base+"/labs/dashboard"))
		check(student, "/labs/dashboard (student, forbidden)")

		browsertest.Do(t, instructor, "open the dashboard", chromedp.Navigate(base+"/labs/dashboard"))
		browsertest.WaitJS(t, instructor, "the class, live", `document.querySelector(".dashboard .conn.live") !== null && `+row+` !== undefined`)
		check(instructor, "/labs/dashboard")
		browsertest.Do(t, instructor, "open her details", chromedp.Navigate(base+drill))
		browsertest.WaitJS(t, instructor, "her details", `document.querySelector("[data-attempts]") !== null && document.querySelector("[data-requests]") !== null`)
		check(instructor, "/labs/dashboard/students/...")
	}
	report(t, failures)
}

// joinAndWork signs a student in through the sign-in form, passes the
// first step of the discovery lab with a request of her own, and submits
// a quiz, ending on its result.
func joinAndWork(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	browsertest.Do(t, ctx, "open a lab", chromedp.Navigate(base+"/labs/discovery"))
	browsertest.WaitJS(t, ctx, "sent to sign in", `location.pathname === "/signin" && document.querySelector("#code") !== null`)
	browsertest.Submit(t, ctx, "join", "/labs/discovery",
		browsertest.Fill(`#name`, thaiName),
		browsertest.Fill(`#code`, joinCode),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, ctx, "the lab, signed in", `document.readyState === "complete" && document.querySelector(".lab-start button") !== null`)
	browsertest.Submit(t, ctx, "start the lab", "/labs/discovery", browsertest.Press(".lab-start button"))
	browsertest.WaitJS(t, ctx, "the first step, live", `document.querySelector('li[data-step="groups"]')?.dataset.state === "current" && document.querySelector(".lab-meta .conn.live") !== null`)
	// Her own request for /apis, with her session, as the step asks.
	browsertest.Eval[bool](t, ctx, `(fetch("/apis"), true)`)
	browsertest.WaitJS(t, ctx, "the first step passed", `document.querySelector('li[data-step="groups"]').dataset.state === "passed"`)
	submitQuiz(t, ctx, base, quiz.WatchQuizID)
}
