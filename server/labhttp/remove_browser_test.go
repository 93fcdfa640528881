package labhttp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// The room's "Remove from the class" in Chromium: a throwaway account's
// drill-down offers it behind a second click that says what it does (in
// English and Thai); removing it brings the instructor back to the room,
// where its row is gone and the classmate's stays, its token is refused,
// and the grader lists none of its quiz attempts.
func TestRemovingAStudentInTheBrowser(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	throwaway, alice := student(t, lab, "Throwaway"), student(t, lab, "Alice")
	throwaway.start("watch")
	throwaway.takeQuiz()
	ctx := browsertest.Start(t)
	browsertest.SignInToDashboard(t, ctx, lab.URL(), instructorToken)
	row := func(u user) string { return `document.querySelector('tr[data-user="` + u.name + `"]')` }
	browsertest.WaitJS(t, ctx, "both students, live", `document.querySelector(".dashboard .conn.live") !== null && `+row(throwaway)+` !== null && `+row(alice)+` !== null`)

	browsertest.Do(t, ctx, "open the throwaway's details", browsertest.Press(`tr[data-user="`+throwaway.name+`"] a.who`))
	browsertest.WaitJS(t, ctx, "the drill-down, its button folded", `document.querySelector('[data-student="`+throwaway.name+`"]') !== null && !document.querySelector("[data-remove]").open`)
	browsertest.Do(t, ctx, "ask to remove", browsertest.Press(`[data-remove] summary`))
	browsertest.WaitJS(t, ctx, "the warning", `document.querySelector("[data-remove]").open && document.querySelector("[data-remove] form").textContent.includes("Throwaway's sign-ins and kubeconfigs stop working at once")`)
	browsertest.Shot(t, ctx, "room-remove-en")
	browsertest.Submit(t, ctx, "remove the throwaway", "/labs/dashboard", browsertest.Press(`[data-remove] button[type=submit]`))
	browsertest.WaitJS(t, ctx, "the room without the throwaway, live", `document.querySelector(".dashboard .conn.live") !== null && `+row(throwaway)+` === null && `+row(alice)+` !== null`)
	browsertest.Shot(t, ctx, "room-removed-en")
	if resp, body := throwaway.get("/kubelab/v1/labs"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the removed student's token: %d %s, want 401", resp.StatusCode, body)
	}
	// Their attempts are dropped, not left to the grader under no name.
	if resp, body := instructor(t, lab).get(quizhttp.GraderPath + "/results"); resp.StatusCode != http.StatusOK || strings.Contains(body, `"`+throwaway.name+`"`) {
		t.Errorf("the grader's results after the throwaway was removed: %d %s", resp.StatusCode, body)
	}

	browsertest.Do(t, ctx, "Alice's details in Thai", chromedp.Navigate(lab.URL()+"/labs/dashboard/students/"+alice.name+"?lang=th"))
	browsertest.Do(t, ctx, "ask to remove", browsertest.Press(`[data-remove] summary`))
	browsertest.WaitJS(t, ctx, "the button and warning in Thai", `document.documentElement.lang === "th" && document.querySelector("[data-remove]").open && `+
		`document.querySelector("[data-remove] summary").textContent === "นำออกจากชั้นเรียน" && document.querySelector("[data-remove] form").textContent.includes("ย้อนกลับไม่ได้")`)
	browsertest.Shot(t, ctx, "room-remove-th")
}
