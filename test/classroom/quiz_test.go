package classroom_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/webclient"
	"github.com/kubelab/kubelab/quiz"
)

// The quiz tests' class: the defaults of --quiz-attempts (3) and
// --quiz-reveal (after-close in a class), as an instructor who sets neither gets.
const (
	quizGraderToken = "grader-token-quiz-0123456789"
	quizAttempts    = 3
)

// quizClass is a class with a grader, who reads every attempt.
func quizClass(t *testing.T) *class {
	t.Helper()
	return startClass(t, "--class-name", "k8s-101", "--grader-token", quizGraderToken)
}

// quizDo sends a request of a student's script: JSON asked for, and sent
// if there is a body.
func quizDo(t *testing.T, s *student, method, path, body string) (*http.Response, string) {
	t.Helper()
	header := []string{"Accept", "application/json"}
	if body != "" {
		header = append(header, "Content-Type", "application/json")
	}
	return s.do(t, method, path, body, header...)
}

// graderGet GETs path with the grader's token.
func graderGet(t *testing.T, c *class, path string) (*http.Response, string) {
	t.Helper()
	return webclient.Send(t, http.DefaultClient, "GET", c.URL()+path, "", "Accept", "application/json", "Authorization", "Bearer "+quizGraderToken)
}

// viewQuiz GETs a quiz as a student's script does: the attempt it is issued.
func viewQuiz(t *testing.T, s *student, quizID string) quiz.View {
	t.Helper()
	resp, body := quizDo(t, s, "GET", "/kubelab/v1/quizzes/"+quizID, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET quiz %s: %d %s", quizID, resp.StatusCode, body)
	}
	var v quiz.View
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Attempt == "" {
		t.Fatalf("not a quiz view (%v): %s", err, body)
	}
	return v
}

// submitQuiz submits answers under an attempt, as a student's script does.
func submitQuiz(t *testing.T, s *student, quizID, attempt string, answers []quiz.Answer) (*http.Response, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"attempt": attempt, "answers": answers})
	return quizDo(t, s, "POST", "/kubelab/v1/quizzes/"+quizID+"/attempts", string(body))
}

// answersFor answers each question of v with the option whose text is the
// bank's answer (right) or another one (wrong), for the first n questions:
// the test finds options by their text, as a student reads them.
func answersFor(t *testing.T, v quiz.View, n int, right bool) []quiz.Answer {
	t.Helper()
	q, _ := quiz.Lesson().Quiz(v.Quiz)
	var out []quiz.Answer
	for _, qv := range v.Questions[:n] {
		qu, _ := q.Question(qv.ID)
		key, _ := qu.Option(qu.Answer)
		for _, o := range qv.Options {
			if (o.Text == key.Text.In(v.Lang)) == right {
				out = append(out, quiz.Answer{Question: qv.ID, Choice: o.ID})
				break
			}
		}
	}
	return out
}

func wantQuizStatus(t *testing.T, resp *http.Response, body string, codes ...int) {
	t.Helper()
	var st struct{ Kind, Message string }
	json.Unmarshal([]byte(body), &st)
	for _, c := range codes {
		if resp.StatusCode == c && st.Kind == "Status" && st.Message != "" {
			return
		}
	}
	t.Fatalf("HTTP %d, want a Status with code %v: %s", resp.StatusCode, codes, body)
}

// TestQuizBlankSubmissionRevealsNothing: submitting nothing used to answer
// with every question's right option (`right: true`) and explanation, so
// one blank submission gave away the whole key.
func TestQuizBlankSubmissionRevealsNothing(t *testing.T) {
	t.Parallel()
	s := quizClass(t)
	alice := signIn(t, nil, s.URL(), "Alice")
	for _, quizID := range []string{quiz.WatchQuizID, quiz.SpotTheBugQuizID} {
		v := viewQuiz(t, alice, quizID)
		resp, body := submitQuiz(t, alice, quizID, v.Attempt, nil)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("blank submission of %s: %d %s", quizID, resp.StatusCode, body)
		}
		_, again := quizDo(t, alice, "GET", "/kubelab/v1/quizzes/"+quizID+"/attempts/"+v.Attempt, "")
		_, page := quizDo(t, alice, "GET", "/quiz/"+quizID+"/attempts/"+v.Attempt, "")
		q, _ := quiz.Lesson().Quiz(quizID)
		for what, text := range map[string]string{"the submission's answer": body, "the attempt's result": again, "the result page": page} {
			if strings.Contains(text, `"right":true`) || strings.Contains(text, `"buggy":true`) {
				t.Errorf("%s of a blank %s marks an answer right: %s", what, quizID, text)
			}
			for _, qu := range q.Questions {
				if mentions(text, qu.Explanation.EN) {
					t.Errorf("%s of a blank %s explains question %s", what, quizID, qu.ID)
				}
				if qu.Answer != "" && strings.Contains(text, `"`+qu.Answer+`"`) {
					t.Errorf("%s of a blank %s names the answer %q", what, quizID, qu.Answer)
				}
				for _, b := range qu.Bugs {
					if mentions(text, b.Explanation.EN) || strings.Contains(text, `"`+b.ID+`"`) {
						t.Errorf("%s of a blank %s explains bug %s", what, quizID, b.ID)
					}
				}
			}
		}
	}
}

// mentions says whether text, a JSON answer or a page, carries s whole:
// as a JSON string (with or without HTML's characters escaped), or in
// the page once its escapes are undone. A prefix of s would miss an
// explanation that starts with a quote or a "<", which both escape.
func mentions(text, s string) bool {
	if strings.Contains(html.UnescapeString(text), s) {
		return true
	}
	for _, escapeHTML := range []bool{true, false} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		enc.Encode(s)
		quoted := strings.TrimSuffix(b.String(), "\n")
		if strings.Contains(text, quoted[1:len(quoted)-1]) {
			return true
		}
	}
	return false
}

// mentions finds every explanation of the lesson's quizzes as a result's
// JSON and its page carry it (escaped), and not in a page without it: the
// blank-submission test's check can see a leak.
func TestMentionsFindsEscapedExplanations(t *testing.T) {
	for _, q := range quiz.Lesson().Quizzes() {
		for _, qu := range q.Questions {
			texts := []string{qu.Explanation.EN}
			for _, b := range qu.Bugs {
				texts = append(texts, b.Explanation.EN)
			}
			for _, text := range texts {
				if text == "" {
					continue
				}
				asJSON, _ := json.Marshal(map[string]string{"explanation": text})
				page := "<p>" + html.EscapeString(text) + "</p>"
				if !mentions(string(asJSON), text) || !mentions(page, text) {
					t.Errorf("%s/%s: mentions misses %q in %s or %s", q.ID, qu.ID, text, asJSON, page)
				}
				if mentions("<p>a page without it</p>", text) {
					t.Errorf("%s/%s: mentions finds %q where it is not", q.ID, qu.ID, text)
				}
			}
		}
	}
}

// TestQuizAttemptIDsAreIssuedByTheServer: students used to choose their own
// attempt ids (and so the order the grader listed attempts in), and could
// submit under any id.
func TestQuizAttemptIDsAreIssuedByTheServer(t *testing.T) {
	t.Parallel()
	s := quizClass(t)
	alice, bob := signIn(t, nil, s.URL(), "Alice"), signIn(t, nil, s.URL(), "Bob")
	made := make([]byte, 16)
	rand.Read(made)
	for _, id := range []string{hex.EncodeToString(made), "000000000000000000000000", "ffffffffffffffffffffffff"} {
		resp, body := submitQuiz(t, alice, quiz.WatchQuizID, id, nil)
		wantQuizStatus(t, resp, body, http.StatusNotFound)
	}
	resp, body := submitQuiz(t, alice, quiz.WatchQuizID, "", nil)
	wantQuizStatus(t, resp, body, http.StatusBadRequest, http.StatusUnprocessableEntity)

	// Bob cannot submit Alice's attempt, nor see it.
	v := viewQuiz(t, alice, quiz.WatchQuizID)
	resp, body = submitQuiz(t, bob, quiz.WatchQuizID, v.Attempt, answersFor(t, v, 5, true))
	wantQuizStatus(t, resp, body, http.StatusNotFound, http.StatusForbidden)
	// Nor under another quiz.
	resp, body = submitQuiz(t, alice, quiz.SpotTheBugQuizID, v.Attempt, nil)
	wantQuizStatus(t, resp, body, http.StatusNotFound)

	// Alice's attempt is still hers to submit, once.
	if resp, body := submitQuiz(t, alice, quiz.WatchQuizID, v.Attempt, answersFor(t, v, 1, true)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("Alice's own attempt: %d %s", resp.StatusCode, body)
	}
	resp, body = submitQuiz(t, alice, quiz.WatchQuizID, v.Attempt, answersFor(t, v, 5, true))
	wantQuizStatus(t, resp, body, http.StatusConflict)

	_, list := graderGet(t, s, "/kubelab/v1/grader/results?quiz="+quiz.WatchQuizID)
	var got struct {
		Items []struct{ AttemptID, Student string }
	}
	json.Unmarshal([]byte(list), &got)
	if len(got.Items) != 1 || got.Items[0].AttemptID != v.Attempt || got.Items[0].Student != "alice" {
		t.Errorf("the grader sees %+v, want Alice's one attempt %s: %s", got.Items, v.Attempt, list)
	}
}

// TestQuizAttemptLimit: attempts were unlimited, and the dashboard showed
// the best; now the (N+1)th is refused.
func TestQuizAttemptLimit(t *testing.T) {
	t.Parallel()
	s := quizClass(t)
	alice := signIn(t, nil, s.URL(), "Alice")
	var last quiz.View
	for i := range quizAttempts {
		last = viewQuiz(t, alice, quiz.WatchQuizID)
		if resp, body := submitQuiz(t, alice, quiz.WatchQuizID, last.Attempt, answersFor(t, last, i+1, true)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("attempt %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := quizDo(t, alice, "GET", "/kubelab/v1/quizzes/"+quiz.WatchQuizID, "")
	wantQuizStatus(t, resp, body, http.StatusConflict, http.StatusTooManyRequests)
	if !strings.Contains(body, "3") {
		t.Errorf("the refusal does not say how many attempts there were: %s", body)
	}
	resp, body = submitQuiz(t, alice, quiz.WatchQuizID, last.Attempt, answersFor(t, last, 5, true))
	wantQuizStatus(t, resp, body, http.StatusConflict, http.StatusTooManyRequests)
	// The other quiz has attempts of its own.
	viewQuiz(t, alice, quiz.SpotTheBugQuizID)
}

// TestQuizOptionIDsDifferPerAttempt: option ids were the bank's own, so a
// key learnt in one attempt, or from another student, worked in the next.
func TestQuizOptionIDsDifferPerAttempt(t *testing.T) {
	t.Parallel()
	s := quizClass(t)
	alice, bob := signIn(t, nil, s.URL(), "Alice"), signIn(t, nil, s.URL(), "Bob")
	first := viewQuiz(t, alice, quiz.WatchQuizID)
	if resp, body := submitQuiz(t, alice, quiz.WatchQuizID, first.Attempt, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	second, bobs := viewQuiz(t, alice, quiz.WatchQuizID), viewQuiz(t, bob, quiz.WatchQuizID)
	seen := map[string]string{}
	for name, v := range map[string]quiz.View{"alice 1": first, "alice 2": second, "bob 1": bobs} {
		for _, qv := range v.Questions {
			for _, o := range qv.Options {
				if other, ok := seen[o.ID]; ok {
					t.Errorf("option id %s is in %s and %s", o.ID, other, name)
				}
				seen[o.ID] = name
			}
		}
	}
	// Bob's right answers, by id, are no answers in Alice's attempt.
	resp, body := submitQuiz(t, alice, quiz.WatchQuizID, second.Attempt, answersFor(t, bobs, 5, true))
	wantQuizStatus(t, resp, body, http.StatusUnprocessableEntity)
}

// TestQuizGraderListsEveryAttempt: the grader sees every attempt in the
// order the server issued them, with timestamps, and first, last and best.
func TestQuizGraderListsEveryAttempt(t *testing.T) {
	t.Parallel()
	s := quizClass(t)
	alice := signIn(t, nil, s.URL(), "Alice")
	scores := []int{2, 4, 1}
	var ids []string
	for _, n := range scores {
		v := viewQuiz(t, alice, quiz.WatchQuizID)
		ids = append(ids, v.Attempt)
		if resp, body := submitQuiz(t, alice, quiz.WatchQuizID, v.Attempt, answersFor(t, v, n, true)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	resp, body := graderGet(t, s, "/kubelab/v1/grader/results?student=alice&quiz="+quiz.WatchQuizID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	type ref struct {
		AttemptID  string
		Number     int
		ScoreGiven int
		Issued     time.Time
		Timestamp  time.Time
	}
	var got struct {
		Items     []ref
		Summaries []struct {
			Student, Quiz     string
			Attempts          int
			First, Last, Best ref
		}
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(scores) {
		t.Fatalf("%d attempts listed, want %d: %s", len(got.Items), len(scores), body)
	}
	for i, it := range got.Items {
		if it.AttemptID != ids[i] || it.Number != i+1 || it.ScoreGiven != scores[i] || it.Issued.IsZero() || it.Timestamp.Before(it.Issued) {
			t.Errorf("attempt %d: %+v, want id %s, score %d, issued before submitted", i+1, it, ids[i], scores[i])
		}
		if i > 0 && it.Issued.Before(got.Items[i-1].Issued) {
			t.Errorf("attempt %d was issued before attempt %d", i+1, i)
		}
	}
	if len(got.Summaries) != 1 {
		t.Fatalf("%d summaries, want 1: %s", len(got.Summaries), body)
	}
	sum := got.Summaries[0]
	if sum.Student != "alice" || sum.Attempts != 3 || sum.First.AttemptID != ids[0] || sum.Last.AttemptID != ids[2] || sum.Best.AttemptID != ids[1] || sum.Best.ScoreGiven != 4 {
		t.Errorf("summary %+v, want first %s, last %s, best %s (4)", sum, ids[0], ids[2], ids[1])
	}
}

// TestQuizInTheBrowser: a student takes the quiz in Chromium, with
// JavaScript and without (the form is a plain form), in Thai; the page
// offers the attempt's own option ids, and the result shows the score and
// the right answer they picked, but not the answers they did not give.
func TestQuizInTheBrowser(t *testing.T) {
	t.Parallel()
	s := quizClass(t)
	q, _ := quiz.Lesson().Quiz(quiz.WatchQuizID)
	raw, _ := q.Question("etcd-raw")
	key, _ := raw.Option(raw.Answer)
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("javascript %v", js), func(t *testing.T) {
			ctx := browsertest.Start(t)
			if !js {
				browsertest.Do(t, ctx, "turn JavaScript off", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
					_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
					return chromedp.Void{}, err
				})
			}
			browsertest.Do(t, ctx, "sign in", chromedp.Navigate(s.URL()+"/signin"),
				chromedp.SendKeys(chromedp.CSS("#name"), fmt.Sprintf("Student %v", js)), chromedp.SendKeys(chromedp.CSS("#code"), joinCode),
				browsertest.Press(`form[action="/signin"] button[type="submit"]`))
			browsertest.WaitJS(t, ctx, "signed in", `!location.pathname.startsWith("/signin")`)
			browsertest.Do(t, ctx, "open the quiz", chromedp.Navigate(s.URL()+"/quiz/"+quiz.WatchQuizID+"?lang=th"))
			browsertest.WaitJS(t, ctx, "the Thai form", `document.documentElement.lang === "th" && document.querySelector("form input[name=attempt]") !== null`)
			// The site's scripts mark the theme button once they run.
			if ran := browsertest.Eval[bool](t, ctx, `document.querySelector("[data-theme-toggle]").hasAttribute("aria-pressed")`); ran != js {
				t.Fatalf("the page's scripts ran: %v, want %v", ran, js)
			}
			values := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("input[type=radio]")].map(i => i.value)`)
			for _, o := range raw.Options {
				if slices.Contains(values, o.ID) {
					t.Errorf("the form offers the bank's option id %s", o.ID)
				}
			}
			browsertest.Do(t, ctx, "pick the right answer", chromedp.Click(chromedp.Search(
				`//fieldset[@id="q-etcd-raw"]//label[contains(normalize-space(.), "`+prefix(key.Text.TH)+`")]/input`)))
			browsertest.Do(t, ctx, "submit", browsertest.Press(`form input[name=attempt] ~ button[type=submit]`))
			browsertest.WaitJS(t, ctx, "the result", `location.pathname.includes("/attempts/") && document.readyState === "complete" && document.body.textContent.includes("/ 5")`)
			page := browsertest.Eval[string](t, ctx, `document.body.textContent`)
			// One option is tagged right: the one the student picked.
			tagged := browsertest.Eval[int](t, ctx, `[...document.querySelectorAll(".tag")].filter(e => e.textContent.trim() === "คำตอบที่ถูก").length`)
			if !strings.Contains(page, "1 / 5") || strings.Contains(page, prefix(raw.Explanation.TH)) || tagged != 1 {
				t.Errorf("the result page, want 1 / 5, one option tagged right (got %d) and no explanation:\n%s", tagged, page)
			}
		})
	}
}

// prefix is the first words of a Thai or English text, cut between runes.
func prefix(s string) string {
	r := []rune(s)
	return string(r[:min(len(r), 20)])
}
