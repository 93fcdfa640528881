package quizhttp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func explained(t *testing.T, body string) quiz.Explained {
	t.Helper()
	var e quiz.Explained
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return e
}

// TestRevealAfterLastAttempt: the default policy explains nothing, and
// shows no right answer but a right choice, until the student's last
// attempt; then every attempt of theirs is explained. The next is refused.
func TestRevealAfterLastAttempt(t *testing.T) {
	t.Parallel()
	lab := startQuiz(t, policyOf(func(c *server.Config) { c.QuizAttempts = 2 }))
	alice := student(t, lab, "alice", "a")
	wrong := []quiz.Answer{{Question: "etcd-raw", Choice: "encrypted-default"}}
	resp, body := alice.take(quiz.WatchQuizID, wrong)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	first := explained(t, body)
	for _, q := range first.Questions {
		if q.Explanation != "" || q.Proof != nil || strings.Contains(body, `"right":true`) {
			t.Errorf("attempt 1 of 2 gives away %s: %s", q.ID, body)
		}
	}
	if first.Revealed {
		t.Error("attempt 1 of 2 says it is revealed")
	}
	_, page := alice.get("/quiz/" + quiz.WatchQuizID + "/attempts/" + first.Attempt)
	if !strings.Contains(page, "once you have used your last attempt") || !strings.Contains(page, "Attempts left: 1") || !strings.Contains(page, ">Try again<") {
		t.Errorf("the result page does not say when answers show, or how many attempts are left: %s", page)
	}
	_, list := alice.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts")
	if !strings.Contains(list, `"attemptsLeft":1`) || strings.Contains(list, "encrypted") {
		t.Errorf("alice's list: %s", list)
	}

	resp, body = alice.take(quiz.WatchQuizID, allRight())
	if resp.StatusCode != http.StatusCreated || !explained(t, body).Revealed {
		t.Fatalf("the last attempt is not revealed: HTTP %d: %s", resp.StatusCode, body)
	}
	resp, body = alice.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts/" + first.Attempt)
	if e := explained(t, body); resp.StatusCode != http.StatusOK || !e.Revealed || e.Questions[3].Explanation == "" {
		t.Errorf("attempt 1, after the last: %s", body)
	}

	resp, body = alice.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID)
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")
	if !strings.Contains(body, "all 2 attempts") {
		t.Errorf("the refusal does not say why: %s", body)
	}
	resp, page = alice.get("/quiz/" + quiz.WatchQuizID + "?lang=th")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "ครบ 2 ครั้ง") {
		t.Errorf("the Thai quiz page past the limit: HTTP %d: %s", resp.StatusCode, page)
	}
	_, page = alice.get("/quiz/" + quiz.WatchQuizID + "/attempts/" + first.Attempt)
	if strings.Contains(page, ">Try again<") || !strings.Contains(page, "Attempts left: 0") {
		t.Errorf("the result page offers another attempt past the limit: %s", page)
	}
	_, page = alice.get("/quiz")
	if !strings.Contains(page, "Attempts left: 0") {
		t.Errorf("the list page does not count attempts left: %s", page)
	}
	if n := submittedAttempts(t, lab, quiz.Filter{}); n != 2 {
		t.Errorf("%d attempts submitted, want 2", n)
	}
}

func TestRevealNever(t *testing.T) {
	t.Parallel()
	lab := startQuiz(t, policyOf(func(c *server.Config) { c.QuizAttempts, c.QuizReveal = 1, "never" }))
	alice := student(t, lab, "alice", "a")
	resp, body := alice.take(quiz.SpotTheBugQuizID, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 4, Reason: "etcd-direct"}}}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	e := explained(t, body)
	q := e.Questions[0]
	if e.Revealed || q.Explanation != "" || len(q.Bugs) != 0 || q.BugsFound != 1 || strings.Contains(body, `"buggy":true`) ||
		strings.Contains(body, `"right":true`) || strings.Contains(body, `"reads-etcd"`) || strings.Contains(body, `"polls"`) {
		t.Errorf("never: the last attempt shows more than how many bugs were found: %s", body)
	}
	// The page says how many, not which.
	_, page := alice.get("/quiz/" + quiz.SpotTheBugQuizID + "/attempts/" + e.Attempt)
	if !strings.Contains(page, "Bugs found: 1 of 4") || strings.Contains(page, "mark-right") || strings.Contains(page, "bug-result") {
		t.Errorf("never: the result page shows which bug was found: %s", page)
	}
}

// testSubmissionsPaced: past the burst, a user's submissions get 429 with
// Retry-After, whatever they submit; other users are not held up.
func testSubmissionsPaced(t *testing.T, lab served) {
	class := ownClass(t)
	alice, bob := classmate(t, lab, class, "alice"), classmate(t, lab, class, "bob")
	v := alice.view(quiz.WatchQuizID)
	bad := quizhttp.AttemptRequest{Attempt: v.Attempt, Answers: []quiz.Answer{{Question: "gone-410", Choice: "guess"}}}
	for i := range quizhttp.DefaultSubmitBurst {
		if resp, body := alice.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", bad); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("submission %d: HTTP %d: %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := alice.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", quizhttp.AttemptRequest{Attempt: v.Attempt, Answers: inView(t, v, allRight())})
	wantStatus(t, resp, body, http.StatusTooManyRequests, "TooManyRequests")
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	resp, body = alice.postForm("/quiz/"+quiz.WatchQuizID, formValues(v.Attempt))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "Too many submissions") {
		t.Errorf("the form past the burst: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp, body := bob.take(quiz.WatchQuizID, allRight()); resp.StatusCode != http.StatusCreated {
		t.Errorf("bob is held up by alice: HTTP %d: %s", resp.StatusCode, body)
	}
	if n := submittedAttempts(t, lab, quiz.Filter{Class: class}); n != 1 {
		t.Errorf("%d attempts submitted, want bob's", n)
	}
}

// TestInstallChecksPolicy: a policy the handlers cannot follow is refused
// at start, not discovered by a student.
func TestInstallChecksPolicy(t *testing.T) {
	t.Parallel()
	client := storagetest.StartEtcd(t).Client()
	for _, p := range []quiz.Policy{{Attempts: -1}, {Attempts: 3, Reveal: "sometimes"}} {
		if err := quizhttp.Install(echo.New(), quizhttp.Config{Client: client, Policy: p}); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
	if err := quizhttp.Install(echo.New(), quizhttp.Config{Client: client, Policy: quiz.Policy{Attempts: 0, Reveal: quiz.RevealNever}, SubmitEvery: time.Second}); err != nil {
		t.Error(err)
	}
}
