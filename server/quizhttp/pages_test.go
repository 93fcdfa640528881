package quizhttp_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/quizhttp"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// secrets are what must not be served before an attempt is submitted:
// every explanation and proof, in both languages, and the result page's
// answer marker.
func secrets() []string {
	out := []string{"right answer", "คำตอบที่ถูก"}
	for _, q := range quiz.Lesson().Quizzes() {
		for _, qu := range q.Questions {
			out = append(out, qu.Explanation.EN, qu.Explanation.TH, qu.Proof.Label.EN, qu.Proof.Label.TH, qu.Proof.Href)
			for _, b := range qu.Bugs {
				out = append(out, b.Explanation.EN, b.Explanation.TH, b.Proof.Label.EN, b.Proof.Label.TH, b.Proof.Href)
			}
		}
	}
	return out
}

// testNothingGivenAwayBeforeSubmitting renders every page and document a
// student can get before submitting and looks for any answer in it.
func testNothingGivenAwayBeforeSubmitting(t *testing.T, lab served) {
	alice := classmate(t, lab, ownClass(t), "alice")
	for _, q := range quiz.Lesson().Quizzes() {
		for _, lang := range []string{"en", "th"} {
			for path, want := range map[string]string{
				"/quiz/" + q.ID + "?lang=" + lang:                   html.EscapeString(q.Questions[0].Prompt.In(i18n.Lang(lang))),
				quizhttp.QuizzesPath + "/" + q.ID + "?lang=" + lang: q.Questions[0].Prompt.In(i18n.Lang(lang)),
				"/quiz?lang=" + lang:                                html.EscapeString(q.Title.In(i18n.Lang(lang))),
				quizhttp.QuizzesPath + "?lang=" + lang:              q.Title.In(i18n.Lang(lang)),
			} {
				resp, body := alice.get(path)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: HTTP %d: %s", path, resp.StatusCode, body)
				}
				if !strings.Contains(body, want) {
					t.Errorf("%s does not show %q", path, want)
				}
				if strings.HasPrefix(path, "/quiz") && resp.Header.Get("Content-Security-Policy") != web.CSP {
					t.Errorf("%s: Content-Security-Policy %q", path, resp.Header.Get("Content-Security-Policy"))
				}
				for _, s := range secrets() {
					if strings.Contains(body, s) || strings.Contains(body, html.EscapeString(s)) {
						t.Errorf("%s gives away %q", path, s)
					}
				}
				for _, marker := range []string{`"answer"`, `"correct"`, `"explanation"`, `"bugs"`, `class="good"`, `class="bad"`, "opt-right", "opt-missed", "mark-right", "mark-missed", "is-right"} {
					if strings.Contains(body, marker) {
						t.Errorf("%s has %s", path, marker)
					}
				}
				for _, qu := range q.Questions {
					for _, o := range qu.Options {
						if strings.Contains(body, `"`+o.ID+`"`) {
							t.Errorf("%s names the bank's option %s/%s", path, qu.ID, o.ID)
						}
					}
				}
			}
		}
	}
}

// testAttemptPerStudent: reloading the quiz shows the same open attempt;
// each student's attempt has option ids and an order of its own.
func testAttemptPerStudent(t *testing.T, lab served) {
	class := ownClass(t)
	alice := classmate(t, lab, class, "alice")
	_, page := alice.get("/quiz/" + quiz.WatchQuizID)
	first, firstOptions := formOf(t, page)
	_, page = alice.get("/quiz/" + quiz.WatchQuizID)
	if again, options := formOf(t, page); again != first || fmt.Sprint(options) != fmt.Sprint(firstOptions) {
		t.Errorf("a reload shows attempt %s %v, want %s %v", again, options, first, firstOptions)
	}
	orders, ids := map[string]bool{}, map[string]bool{}
	for i := range 20 {
		s := classmate(t, lab, class, fmt.Sprintf("s%d", i))
		_, page := s.get("/quiz/" + quiz.WatchQuizID)
		v := s.view(quiz.WatchQuizID)
		attempt, options := formOf(t, page)
		if attempt != v.Attempt || len(options) != 5 || len(options["gone-410"]) != 4 {
			t.Fatalf("form: attempt %s (view %s), options %v", attempt, v.Attempt, options)
		}
		var texts []string
		for _, o := range v.Questions[0].Options {
			texts = append(texts, o.Text)
		}
		orders[strings.Join(texts, "|")] = true
		for _, id := range options["gone-410"] {
			if ids[id] {
				t.Errorf("option id %s in two students' attempts", id)
			}
			ids[id] = true
		}
	}
	if len(orders) < 3 {
		t.Errorf("20 students: %d orders of one question", len(orders))
	}
}

func testTakeQuizInThai(t *testing.T, lab served) {
	class := ownClass(t)
	alice := classmate(t, lab, class, "alice")
	resp, page := alice.do("GET", "/quiz/"+quiz.WatchQuizID, "", nil, "Cookie", "lang=th")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `lang="th"`) || !strings.Contains(page, "ส่งคำตอบ") {
		t.Fatalf("the lang cookie did not give a Thai page: HTTP %d", resp.StatusCode)
	}
	attempt, _ := formOf(t, page)
	id := idsOf(alice.view(quiz.WatchQuizID))
	form := formValues(attempt)
	for q, o := range right {
		form.Set("q:"+q, id(q, o))
	}
	resp, body := alice.postForm("/quiz/"+quiz.WatchQuizID+"?lang=th", form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit: HTTP %d: %s", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	if loc != "/quiz/"+quiz.WatchQuizID+"/attempts/"+attempt+"?lang=th" {
		t.Fatalf("redirected to %q", loc)
	}
	resp, body = alice.get(loc)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "5 / 5") {
		t.Fatalf("result: HTTP %d: %s", resp.StatusCode, body)
	}
	q, _ := quiz.Lesson().Quiz(quiz.WatchQuizID)
	for _, qu := range q.Questions {
		if !strings.Contains(body, html.EscapeString(qu.Explanation.TH)) || !strings.Contains(body, `href="`+qu.Proof.Href+`"`) {
			t.Errorf("%s: the result lacks the Thai explanation or the proof link", qu.ID)
		}
		if strings.Contains(body, html.EscapeString(qu.Explanation.EN)) {
			t.Errorf("%s: English explanation on the Thai page", qu.ID)
		}
	}
	// A reload of the POST does not store the attempt twice.
	resp, body = alice.postForm("/quiz/"+quiz.WatchQuizID+"?lang=th", form)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "ส่งคำตอบนี้ไม่ได้") || !strings.Contains(body, `href="`+loc+`"`) {
		t.Errorf("resubmitted: HTTP %d, want 409 in Thai with a link to the result: %s", resp.StatusCode, body)
	}
	if n := submittedAttempts(t, lab, quiz.Filter{Class: class}); n != 1 {
		t.Errorf("%d attempts submitted, want 1", n)
	}
	// The list page links the attempt with its score.
	if _, body := alice.get("/quiz?lang=th"); !strings.Contains(body, attempt) || !strings.Contains(body, "5/5") {
		t.Errorf("the list does not show the attempt")
	}
}

func testSpotTheBugForm(t *testing.T, lab served) {
	alice := classmate(t, lab, ownClass(t), "alice")
	cases := []struct {
		marks []string // line, reason, ...
		score string
		shows string
	}{
		{[]string{"4", "etcd-direct", "6", "polling", "5", "running-not-ready", "3", "no-timeout"}, "4 / 4", "Correct"},
		{[]string{"4", "etcd-direct", "6", ""}, "1 / 4", "Partly right"},
		{[]string{"2", "await-in-loop"}, "0 / 4", "not a bug, or not this reason"},
		{[]string{"3", "polling", "3", "no-timeout"}, "2 / 4", "Bugs found: 2 of 4"},
		{nil, "0 / 4", "Not answered"},
	}
	for _, c := range cases {
		_, page := alice.get("/quiz/" + quiz.SpotTheBugQuizID)
		attempt, _ := formOf(t, page)
		id := idsOf(alice.view(quiz.SpotTheBugQuizID))
		if !strings.Contains(page, `name="line:wait-for-pod-ready:8"`) || strings.Contains(page, `name="line:wait-for-pod-ready:9"`) {
			t.Fatal("the form does not offer lines 1 to 8")
		}
		// Every reason on every line, so that a line can take two marks.
		if n := strings.Count(page, `type="checkbox" name="line:wait-for-pod-ready:3"`); n != 7 {
			t.Fatalf("line 3 offers %d reasons to check, want all 7", n)
		}
		form := formValues(attempt)
		for i := 0; i+1 < len(c.marks); i += 2 {
			form.Add("line:wait-for-pod-ready:"+c.marks[i], id("wait-for-pod-ready", c.marks[i+1]))
		}
		for n := 1; n <= 8; n++ {
			if !form.Has("line:wait-for-pod-ready:" + string(rune('0'+n))) {
				form.Set("line:wait-for-pod-ready:"+string(rune('0'+n)), "") // as a browser sends unmarked lines
			}
		}
		resp, body := alice.postForm("/quiz/"+quiz.SpotTheBugQuizID, form)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%v: HTTP %d: %s", c.marks, resp.StatusCode, body)
		}
		_, body = alice.get(resp.Header.Get("Location"))
		if !strings.Contains(body, c.score) || !strings.Contains(body, c.shows) {
			t.Errorf("%v: want %q and %q in the result", c.marks, c.score, c.shows)
		}
		// Revealed: the question's proof, and each bug's for an answered one.
		hrefs := []string{`href="/lesson/etcd#etcd"`}
		if c.marks != nil {
			hrefs = append(hrefs, `href="/lesson/resource-version#watch"`)
		}
		for _, href := range hrefs {
			if !strings.Contains(body, href) {
				t.Errorf("%v: no link %s", c.marks, href)
			}
		}
	}
}

// testBrowserSession: a student's browser, signed in with the session
// cookie, takes a quiz and sees the result as theirs.
func testBrowserSession(t *testing.T, lab served) {
	class := ownClass(t)
	name := class + "-alice-7f3a"
	s := student(t, lab, name, class)
	cookie := authn.SessionCookie + "=" + s.token
	browser := as{t: t, lab: lab}
	resp, page := browser.do("GET", "/quiz/"+quiz.WatchQuizID, "", nil, "Cookie", cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, page)
	}
	attempt, _ := formOf(t, page)
	v := as{t: t, lab: lab, token: s.token}.view(quiz.WatchQuizID)
	form := formValues(attempt, "q:etcd-raw", idsOf(v)("etcd-raw", "protobuf"))
	resp, body := browser.postForm("/quiz/"+quiz.WatchQuizID, form, "Cookie", cookie, "Sec-Fetch-Site", "same-origin", "Origin", lab.URL())
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit: HTTP %d: %s", resp.StatusCode, body)
	}
	if _, body := browser.do("GET", "/quiz", "", nil, "Cookie", cookie); !strings.Contains(body, name) || !strings.Contains(body, attempt) {
		t.Errorf("the list is not alice's: %s", body)
	}
	_, body = grader(t, lab).get(quizhttp.GraderPath + "/results?student=" + url.QueryEscape(name))
	if !strings.Contains(body, attempt) || !strings.Contains(body, `"class":"`+class+`"`) {
		t.Errorf("the grader does not see alice's attempt: %s", body)
	}
}
