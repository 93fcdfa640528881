package classroom_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/webclient"
	"github.com/kubelab/kubelab/quiz"
)

const harvestInstructorToken = "harvest-instructor-token-0123456789"

// TestThrowawayAccountHarvestsNoQuizKey: a throwaway
// account ("zz helper") used up its three attempts at the lesson quiz and,
// with after-last-attempt, was then shown every right answer, so the real
// account scored 5/5 on its first try. A class's default reveal policy is
// now after-close: the throwaway's attempts show nothing of the key on any
// page until the instructor closes the quiz, and a closed quiz takes no
// attempt, so the key it then shows is no use.
func TestThrowawayAccountHarvestsNoQuizKey(t *testing.T) {
	t.Parallel()
	// The class's defaults for --quiz-attempts and --quiz-reveal.
	c := startClass(t, "--class-name", "k8s-101", "--instructor-token", harvestInstructorToken)
	helper, bob := signIn(t, nil, c.URL(), "zz helper"), signIn(t, nil, c.URL(), "Bob")
	id := quiz.WatchQuizID

	// The throwaway uses up every attempt, each answer of each wrong.
	var attempts []string
	var v quiz.View
	for i := range quizAttempts {
		v = viewQuiz(t, helper, id)
		resp, body := submitQuiz(t, helper, id, v.Attempt, answersFor(t, v, len(v.Questions), false))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("the throwaway's attempt %d: %d %s", i+1, resp.StatusCode, body)
		}
		if leaks := keyShown(t, body, ""); len(leaks) > 0 {
			t.Errorf("the throwaway's attempt %d of %d, as submitted, shows the key: %s", i+1, quizAttempts, strings.Join(leaks, "; "))
		}
		attempts = append(attempts, v.Attempt)
	}

	// Then it reads every place a result shows: nothing of the key.
	for _, what := range harvest(t, helper, id, attempts) {
		if len(what.leaks) > 0 {
			t.Errorf("with no attempt left, %s shows the key: %s", what.place, strings.Join(what.leaks, "; "))
		}
	}

	// It takes no further attempt, by the API or the page.
	resp, body := quizDo(t, helper, "GET", "/kubelab/v1/quizzes/"+id, "")
	wantQuizStatus(t, resp, body, http.StatusConflict)
	resp, body = submitQuiz(t, helper, id, v.Attempt, answersFor(t, v, len(v.Questions), true))
	wantQuizStatus(t, resp, body, http.StatusConflict)
	if resp, page := helper.do(t, "GET", "/quiz/"+id, "", "Accept", "text/html"); resp.StatusCode != http.StatusConflict || strings.Contains(page, `name="attempt"`) {
		t.Errorf("the throwaway's quiz page with no attempt left: %d, want 409 and no form:\n%s", resp.StatusCode, page)
	}

	// The real account opens its attempt while the quiz is open.
	open := viewQuiz(t, bob, id)

	// The instructor closes the quiz, as the README says: a POST with
	// their token to the HTTPS port.
	resp, body = webclient.Send(t, c.browser(t), "POST", c.httpsURL+"/kubelab/v1/quizzes/"+id+"/close", "",
		"Accept", "application/json", "Authorization", "Bearer "+harvestInstructorToken)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"QuizClosure"`) {
		t.Fatalf("the instructor closes %s: %d %s", id, resp.StatusCode, body)
	}

	// Now the throwaway's results show the key, through the same checks
	// that found nothing above: every question's right option and why.
	for _, what := range harvest(t, helper, id, attempts) {
		if what.reveals && len(what.leaks) < 2*len(open.Questions) {
			t.Errorf("once the quiz closed, %s shows %d signs of the key, want a right answer and an explanation for each of %d questions: %v",
				what.place, len(what.leaks), len(open.Questions), what.leaks)
		}
	}

	// And the key is no use: the real account's attempt, opened before the
	// close and answered right, is refused, and so is a new one.
	resp, body = submitQuiz(t, bob, id, open.Attempt, answersFor(t, open, len(open.Questions), true))
	wantQuizStatus(t, resp, body, http.StatusConflict)
	if !strings.Contains(body, "closed") {
		t.Errorf("the refusal of the real account's attempt does not say the quiz is closed: %s", body)
	}
	resp, body = quizDo(t, bob, "GET", "/kubelab/v1/quizzes/"+id, "")
	wantQuizStatus(t, resp, body, http.StatusConflict)
	if resp, body := quizDo(t, bob, "GET", "/kubelab/v1/quizzes/"+id+"/attempts", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"items":[]`) {
		t.Errorf("the real account's attempts after the close: %d %s, want none", resp.StatusCode, body)
	}
}

// place is what one of a student's pages or answers showed of the key.
type place struct {
	place   string
	reveals bool // a result of an answered attempt: once revealed, it shows the key
	leaks   []string
}

// harvest reads, as s, every answer and page where an attempt at quizID
// or its result shows: each attempt's result as JSON and as a page (in
// English and Thai), the attempts list, the quiz list page and the quiz
// page; and says what each showed of the key.
func harvest(t *testing.T, s *student, quizID string, attempts []string) []place {
	t.Helper()
	var out []place
	get := func(path string, reveals bool, accept string) {
		t.Helper()
		resp, body := s.do(t, "GET", path, "", "Accept", accept)
		if reveals && resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		p := place{place: "GET " + path, reveals: reveals}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			p.leaks = keyShown(t, body, "")
		} else {
			p.leaks = keyShown(t, "", body)
		}
		out = append(out, p)
	}
	for _, a := range attempts {
		get("/kubelab/v1/quizzes/"+quizID+"/attempts/"+a, true, "application/json")
		get("/kubelab/v1/quizzes/"+quizID+"/attempts/"+a+"?lang=th", true, "application/json")
		get("/quiz/"+quizID+"/attempts/"+a, true, "text/html")
		get("/quiz/"+quizID+"/attempts/"+a+"?lang=th", true, "text/html")
	}
	get("/kubelab/v1/quizzes/"+quizID+"/attempts", false, "application/json")
	get("/kubelab/v1/quizzes/"+quizID, false, "application/json")
	get("/quiz", false, "text/html")
	get("/quiz/"+quizID, false, "text/html")
	return out
}

// keyShown lists what a result (as JSON, or as a page) shows of its
// quiz's key: a right answer the student did not give, an explanation.
// The student of these tests answers every question wrong, so any option
// marked right is the key.
func keyShown(t *testing.T, jsonBody, page string) []string {
	t.Helper()
	var leaks []string
	if jsonBody != "" {
		var e quiz.Explained
		if json.Unmarshal([]byte(jsonBody), &e) != nil || e.Quiz == "" || len(e.Questions) == 0 {
			// Not a result (a list, a Status): it has no field of the key.
			for _, field := range []string{`"right":true`, `"explanation"`, `"proof"`} {
				if strings.Contains(jsonBody, field) {
					leaks = append(leaks, field)
				}
			}
			return leaks
		}
		q, _ := quiz.Lesson().Quiz(e.Quiz)
		if e.Revealed {
			leaks = append(leaks, "revealed: true")
		}
		for _, eq := range e.Questions {
			qu, _ := q.Question(eq.ID)
			key, _ := qu.Option(qu.Answer)
			for _, o := range eq.Options {
				if o.Right && o.Text == key.Text.In(e.Lang) && !o.Chosen {
					leaks = append(leaks, fmt.Sprintf("%s: the right option %s (%q)", eq.ID, o.ID, o.Text))
				}
			}
			if eq.Explanation != "" || eq.Proof != nil {
				leaks = append(leaks, "explains "+eq.ID)
			}
		}
		return leaks
	}
	// A page: each question is a section, where the right option the
	// student did not choose is an "opt-missed" item, and its explanation
	// follows (checked whole, the page's escapes undone).
	text := html.UnescapeString(page)
	for _, q := range quiz.Lesson().Quizzes() {
		for _, qu := range q.Questions {
			if _, section, ok := strings.Cut(page, `<section id="q-`+qu.ID+`"`); ok {
				section, _, _ = strings.Cut(section, "</section>")
				if strings.Contains(section, `class="opt-missed"`) {
					leaks = append(leaks, qu.ID+": the right option tagged")
				}
			}
			if strings.Contains(text, qu.Explanation.EN) || strings.Contains(text, qu.Explanation.TH) {
				leaks = append(leaks, "explains "+qu.ID)
			}
		}
	}
	return leaks
}
