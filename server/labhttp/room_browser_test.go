package labhttp_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

const thaiName = "สมชาย ใจดี"

// The instructor's room in Chromium: with the dashboard open, a student
// with a Thai name signs in (another browser), starts a lab and submits the
// quiz; the dashboard shows her name as typed, not started, then her lab
// by its title, her score and "stuck", all without a reload. Then the
// drill-down, in Thai, light and dark, on a desktop and a 390 px phone.
func TestInstructorsRoomInTheBrowser(t *testing.T) {
	// Not parallel: a student turns stuck after 4 s of wall time, which
	// other tests beside it would stretch the test's own steps past.
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.StuckAfter = 4 * time.Second })
	ctx := browsertest.Start(t)

	browsertest.SignInToDashboard(t, ctx, lab.URL(), instructorToken)
	browsertest.WaitJS(t, ctx, "the empty class, live", `document.querySelector(".dashboard .conn.live") !== null && !document.querySelector("[data-empty]").hidden`)
	// Anything the page keeps is lost if it reloads.
	browsertest.Eval[bool](t, ctx, `(window.sameDashboard = true)`)

	// The student, in a browser of her own (her own cookies).
	sctx, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	browsertest.Do(t, sctx, "open the sign-in page", chromedp.Navigate(lab.URL()+"/signin"))
	browsertest.Do(t, sctx, "join with a Thai name",
		browsertest.Fill(`#name`, thaiName),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, sctx, "signed in", `!location.pathname.startsWith("/signin") && document.querySelector("[data-account]")?.hidden === false`)

	row := `document.querySelector('tr[data-user="student"]')`
	browsertest.WaitJS(t, ctx, "her name as typed, not started, live",
		row+`?.querySelector("[data-display-name]")?.textContent === "`+thaiName+`" && `+row+`.textContent.includes("not started") && `+row+`.textContent.includes("joined just now")`)

	browsertest.Do(t, sctx, "open the watch lab", chromedp.Navigate(lab.URL()+"/labs/watch"))
	browsertest.Submit(t, sctx, "start it", "/labs/watch", browsertest.Press(".lab-start button"))
	browsertest.WaitJS(t, ctx, "her lab by its title", row+`.textContent.includes("2. ")  && !`+row+`.textContent.includes("not started") && !`+row+`.textContent.includes("2. watch ")`)

	browsertest.Do(t, sctx, "open the quiz", chromedp.Navigate(lab.URL()+"/quiz/"+quiz.WatchQuizID))
	browsertest.WaitJS(t, sctx, "the quiz form", `document.querySelector("form input[name=attempt]") !== null`)
	browsertest.Eval[bool](t, sctx, `([...document.querySelectorAll("fieldset")].forEach(f => f.querySelector("input[type=radio]")?.click()), true)`)
	browsertest.Do(t, sctx, "submit", browsertest.Press(`form input[name=attempt] ~ button[type=submit]`))
	browsertest.WaitJS(t, sctx, "the result", `location.pathname.includes("/attempts/") && document.readyState === "complete" && document.body.textContent.includes("/ 5")`)
	score := regexp.MustCompile(`(\d) / 5`).FindStringSubmatch(browsertest.Eval[string](t, sctx, `document.body.textContent`))
	if score == nil {
		t.Fatal("the result page shows no score")
	}
	browsertest.WaitJS(t, ctx, "her score, live", row+`.querySelector('[data-quiz="`+quiz.WatchQuizID+`"]')?.textContent.includes("`+score[1]+`/5")`)
	browsertest.WaitJS(t, ctx, "stuck, live", row+`.classList.contains("stuck") && `+row+`.querySelector(".pill.bad") !== null`)
	if !browsertest.Eval[bool](t, ctx, `window.sameDashboard === true`) {
		t.Fatal("the dashboard reloaded")
	}
	if text := browsertest.Eval[string](t, ctx, row+`.textContent`); strings.Contains(text, "0001") || strings.Contains(text, quiz.WatchQuizID+" ") {
		t.Errorf("the row shows a zero time or an id for a title: %q", text)
	}
	browsertest.Shot(t, ctx, "room-dashboard-en")

	// The grader's view names her as typed too.
	_, body := instructor(t, lab).get(quizhttp.GraderPath + "/results")
	var list quizhttp.ScoreList
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Items) != 1 || list.Items[0].DisplayName != thaiName || list.Items[0].Student != "student" {
		t.Errorf("grader results: %v %s", err, body)
	}
	resp, csvBody := instructor(t, lab).get(quizhttp.GraderPath + "/results.csv")
	if resp.StatusCode != http.StatusOK || !strings.Contains(csvBody, "student,"+thaiName+",") {
		t.Errorf("grader CSV: HTTP %d:\n%s", resp.StatusCode, csvBody)
	}

	// Thai and dark, desktop then phone.
	browsertest.Do(t, ctx, "the dashboard in Thai", chromedp.Navigate(lab.URL()+"/labs/dashboard?lang=th"))
	browsertest.WaitJS(t, ctx, "Thai, live", `document.documentElement.lang === "th" && document.querySelector(".dashboard .conn.live") !== null && `+row+`?.textContent.includes("ติดอยู่")`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	browsertest.Shot(t, ctx, "room-dashboard-th-dark")
	browsertest.Do(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	browsertest.NoWiderThan(t, ctx, "the dashboard", 390)
	browsertest.Shot(t, ctx, "room-dashboard-th-dark-phone")

	browsertest.Do(t, ctx, "open her details", browsertest.Press(`tr[data-user="student"] a.who`))
	browsertest.WaitJS(t, ctx, "the drill-down in Thai", `document.querySelector('[data-student="student"]') !== null && document.querySelector("h1").textContent.includes("`+thaiName+`") && document.querySelector("[data-attempts]") !== null && document.querySelector("[data-requests]") !== null`)
	browsertest.NoWiderThan(t, ctx, "the drill-down", 390)
	if paths := browsertest.Eval[string](t, ctx, `document.querySelector("[data-requests]").textContent`); strings.Contains(paths, "/static/") || !strings.Contains(paths, "/quiz/"+quiz.WatchQuizID) {
		t.Errorf("the recent requests list assets, or not her quiz: %s", paths)
	}
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", document.querySelector("#requests-h").scrollIntoView(), true)`)
	browsertest.Shot(t, ctx, "room-student-th-dark-phone")
	browsertest.Do(t, ctx, "desktop, light, English", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(lab.URL()+"/labs/dashboard/students/student?lang=en"))
	browsertest.WaitJS(t, ctx, "the drill-down in English", `document.documentElement.lang === "en" && document.querySelector("[data-requests]") !== null`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "light", true)`)
	browsertest.Shot(t, ctx, "room-student-en")
	browsertest.Do(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lab.URL()+"/labs/dashboard?lang=en"))
	browsertest.WaitJS(t, ctx, "the dashboard on a phone", `document.querySelector(".dashboard .conn.live") !== null && `+row+` !== null`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "light", true)`)
	browsertest.NoWiderThan(t, ctx, "the dashboard", 390)
	browsertest.Shot(t, ctx, "room-dashboard-en-phone")
}

// Two students whose names read the same are flagged on the room, with
// the user names that tell them apart, in both languages, light and
// dark, on a desktop and a phone.
func TestRoomFlagsSameNamesInTheBrowser(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	for _, name := range []string{"Bob Lee", "bob  lee", "Alice"} {
		student(t, lab, name)
	}
	ctx := browsertest.Start(t)
	browsertest.SignInToDashboard(t, ctx, lab.URL(), instructorToken)
	flagged := `[...document.querySelectorAll("tr[data-user] [data-same-name]")].map(e => e.closest("tr").dataset.user + ": " + e.textContent.replace(/\s+/g, " ").trim()).join(" | ")`
	browsertest.WaitJS(t, ctx, "the two Bobs flagged, live", `document.querySelector(".dashboard .conn.live") !== null && document.querySelectorAll("[data-same-name]").length === 2`)
	// In the room's order: names as a reader orders them, "bob  lee" before "Bob Lee".
	if got, want := browsertest.Eval[string](t, ctx, flagged), "bob-lee-2: ⚠ same name as bob-lee | bob-lee: ⚠ same name as bob-lee-2"; got != want {
		t.Errorf("flagged rows: %q, want %q", got, want)
	}
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "light", true)`)
	browsertest.Shot(t, ctx, "room-same-names-en")
	browsertest.Do(t, ctx, "Thai, dark, phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lab.URL()+"/labs/dashboard?lang=th"))
	browsertest.WaitJS(t, ctx, "the flags in Thai", `document.documentElement.lang === "th" && document.querySelectorAll("[data-same-name]").length === 2 && document.querySelector("[data-same-name]").textContent.includes("ชื่อซ้ำกับ")`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	browsertest.NoWiderThan(t, ctx, "the dashboard", 390)
	browsertest.Shot(t, ctx, "room-same-names-th-dark-phone")
}
