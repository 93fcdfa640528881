package quizhttp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// TestRevealAfterCloseHarvestsNothing is the attack after-close stops: a
// throwaway account ("zz helper") uses up its attempts so that, under
// after-last-attempt, it is shown every right answer for the real account
// to copy. Under after-close no attempt is explained, the throwaway's last
// included, until the instructor closes the quiz; then every attempt is,
// and the quiz takes no more, so the key can no longer help anyone.
func TestRevealAfterCloseHarvestsNothing(t *testing.T) {
	t.Parallel()
	lab := startQuiz(t, policyOf(func(c *server.Config) { c.QuizAttempts, c.QuizReveal = 3, string(quiz.RevealAfterClose) }))
	helper, real := student(t, lab, "zz-helper", "c"), student(t, lab, "bob", "c")
	teacher := mint(t, lab, "kubelab-instructor", classroom.InstructorGroup)
	guess := []quiz.Answer{{Question: "etcd-raw", Choice: "encrypted-default"}}

	var attempts []string
	for i := range 3 {
		resp, body := helper.take(quiz.WatchQuizID, guess)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("attempt %d: HTTP %d: %s", i+1, resp.StatusCode, body)
		}
		e := explained(t, body)
		attempts = append(attempts, e.Attempt)
		if e.Revealed || strings.Contains(body, `"right":true`) || strings.Contains(body, `"explanation"`) {
			t.Fatalf("attempt %d of 3, before the quiz closed, gives the key away: %s", i+1, body)
		}
	}
	_, page := helper.get("/quiz/" + quiz.WatchQuizID + "/attempts/" + attempts[2])
	if !strings.Contains(page, "once your instructor closes the quiz") {
		t.Errorf("the result page does not say when the answers show: %s", page)
	}
	// The real account's open attempt, issued before the close.
	open := real.view(quiz.WatchQuizID)

	// Only the instructor closes a quiz, and only they see the button.
	resp, body := real.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/close", "")
	wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
	if _, list := real.get("/quiz"); strings.Contains(list, "/close") {
		t.Errorf("a student's quiz list offers to close a quiz: %s", list)
	}
	if _, list := teacher.get("/quiz"); !strings.Contains(list, `action="/quiz/`+quiz.WatchQuizID+`/close?lang=en"`) {
		t.Errorf("the instructor's quiz list offers no close: %s", list)
	}
	// A page of another site in the instructor's browser posts the close
	// button's form: the front door's cross-origin check refuses it.
	resp, body = teacher.do("POST", "/quiz/"+quiz.WatchQuizID+"/close", "application/x-www-form-urlencoded", nil,
		"Origin", "http://cats.example", "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
		t.Fatalf("a cross-site close: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp, body := helper.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts/" + attempts[0]); resp.StatusCode != http.StatusOK || explained(t, body).Revealed {
		t.Fatalf("after the cross-site close, the quiz is closed: %s", body)
	}
	resp, body = teacher.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/close", "")
	var closed quizhttp.Closure
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &closed) != nil || closed.Kind != "QuizClosure" || closed.ClosedAt.IsZero() {
		t.Fatalf("the instructor's close: HTTP %d: %s", resp.StatusCode, body)
	}
	// Closing again keeps the first time.
	if _, again := teacher.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/close", ""); !strings.Contains(again, closed.ClosedAt.Format(time.RFC3339Nano)) {
		t.Errorf("a second close moved the time: %s, first %s", again, body)
	}

	resp, body = helper.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts/" + attempts[0])
	if e := explained(t, body); resp.StatusCode != http.StatusOK || !e.Revealed || e.Questions[0].Explanation == "" {
		t.Errorf("after the close, an attempt is not explained: %s", body)
	}
	resp, body = real.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID)
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")
	if !strings.Contains(body, "closed") {
		t.Errorf("the refusal does not say the quiz is closed: %s", body)
	}
	resp, body = real.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", quizhttp.AttemptRequest{Attempt: open.Attempt, Answers: inView(t, open, allRight())})
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")
	if resp, page := real.get("/quiz/" + quiz.WatchQuizID + "?lang=th"); resp.StatusCode != http.StatusConflict || !strings.Contains(page, "ปิดแล้ว") {
		t.Errorf("the Thai quiz page of a closed quiz: HTTP %d: %s", resp.StatusCode, page)
	}
	if _, list := teacher.get("/quiz"); strings.Contains(list, `/`+quiz.WatchQuizID+`/close`) || !strings.Contains(list, "This quiz closed on") {
		t.Errorf("the list of a closed quiz still offers to close it, or does not say it closed: %s", list)
	}
	if n := submittedAttempts(t, lab, quiz.Filter{Student: "bob"}); n != 0 {
		t.Errorf("bob submitted %d attempts after the close, want 0", n)
	}
	// The other quiz is still open.
	real.view(quiz.SpotTheBugQuizID)
}

// TestQuizClosesAtItsDeadline: --quiz-closes-at closes every quiz by
// itself; before it, they are open.
func TestQuizClosesAtItsDeadline(t *testing.T) {
	t.Parallel()
	past := startQuiz(t, policyOf(func(c *server.Config) {
		c.QuizReveal, c.QuizClosesAt = string(quiz.RevealAfterClose), time.Now().Add(-time.Minute)
	}))
	resp, body := student(t, past, "alice", "c").get(quizhttp.QuizzesPath + "/" + quiz.SpotTheBugQuizID)
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")

	future := startQuiz(t, policyOf(func(c *server.Config) {
		c.QuizReveal, c.QuizClosesAt = string(quiz.RevealAfterClose), time.Now().Add(time.Hour)
	}))
	student(t, future, "alice", "c").view(quiz.SpotTheBugQuizID)
}
