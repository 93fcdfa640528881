package quizhttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// hugeSubmission is a submission past MaxBodyBytes.
func hugeSubmission() string {
	return `{"attempt":"x","answers":[{"question":"gone-410","choice":"` + strings.Repeat("x", quizhttp.MaxBodyBytes) + `"}]}`
}

// testBadSubmissions: each gets a clear 4xx and nothing is submitted
// through the quiz API (testBadGrades does the same through the grader).
// Answers are written in the bank's ids and put into the ids of the
// attempt each student is issued.
func testBadSubmissions(t *testing.T, lab served) {
	class := ownClass(t)
	huge := hugeSubmission()
	watch := quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts"
	spot := quizhttp.QuizzesPath + "/" + quiz.SpotTheBugQuizID + "/attempts"
	choice := func(q, o string) quiz.Answer { return quiz.Answer{Question: q, Choice: o} }
	marks := func(kv ...any) quiz.Answer {
		a := quiz.Answer{Question: "wait-for-pod-ready"}
		for i := 0; i+1 < len(kv); i += 2 {
			a.Marks = append(a.Marks, quiz.Mark{Line: kv[i].(int), Reason: kv[i+1].(string)})
		}
		return a
	}
	tests := []struct {
		name, path string
		answers    []quiz.Answer // in the bank's ids, sent with the attempt issued
		body       string        // sent as it is, if set
		code       int
		reason     string
		mention    string
	}{
		{"unknown quiz", quizhttp.QuizzesPath + "/nope/attempts", nil, `{"attempt":"x","answers":[]}`, 404, "NotFound", "nope"},
		{"unknown option", watch, []quiz.Answer{choice("gone-410", "reboot")}, "", 422, "Invalid", "answers[0].choice"},
		{"the bank's own id", watch, nil, `{"attempt":"%s","answers":[{"question":"gone-410","choice":"compacted-relist"}]}`, 422, "Invalid", "answers[0].choice"},
		{"unknown question", watch, []quiz.Answer{choice("why", "reboot")}, "", 422, "Invalid", "answers[0].question"},
		{"duplicate answers", watch, []quiz.Answer{choice("gone-410", "etcd-compacted"), choice("gone-410", "compacted-relist")}, "", 422, "Invalid", "answers[1].question"},
		{"same mark twice", spot, []quiz.Answer{marks(4, "etcd-direct", 3, "polling", 4, "etcd-direct")}, "", 422, "Invalid", "answers[0].marks[2].line"},
		{"line out of range", spot, []quiz.Answer{marks(99, "polling")}, "", 422, "Invalid", "lines 1 to 8"},
		{"unknown reason", spot, []quiz.Answer{marks(4, "slow")}, "", 422, "Invalid", "slow"},
		{"huge body", watch, nil, huge, 413, "RequestEntityTooLarge", "at most"},
		{"not JSON", watch, nil, `answers=gone-410`, 400, "BadRequest", "not a valid submission"},
		{"unknown field", watch, nil, `{"attempt":"%s","answers":[],"student":"bob"}`, 400, "BadRequest", "student"},
		{"two values", watch, nil, `{"attempt":"%s","answers":[]} {"answers":[]}`, 400, "BadRequest", "more than one"},
		{"no attempt", watch, nil, `{"answers":[]}`, 400, "BadRequest", "attempt"},
		{"made-up attempt", watch, nil, `{"attempt":"0123456789abcdef0123456789abcdef","answers":[]}`, 404, "NotFound", "not issued to you"},
		{"path in the attempt", watch, nil, `{"attempt":"../../x","answers":[]}`, 404, "NotFound", "not issued to you"},
		{"another quiz's attempt", spot, nil, `{"attempt":"%s","answers":[]}`, 404, "NotFound", "not issued to you"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A student each: the cases are not a burst of one user's.
			who := classmate(t, lab, class, fmt.Sprintf("s%d", i))
			body := tt.body
			if body == "" || strings.Contains(body, "%s") {
				v := who.view(quiz.WatchQuizID)
				if tt.path == spot && body == "" {
					v = who.view(quiz.SpotTheBugQuizID)
				}
				if body == "" {
					b, _ := json.Marshal(quizhttp.AttemptRequest{Attempt: v.Attempt, Answers: inView(t, v, tt.answers)})
					body = string(b)
				} else {
					body = fmt.Sprintf(body, v.Attempt)
				}
			}
			resp, got := who.postJSON(tt.path, body)
			wantStatus(t, resp, got, tt.code, tt.reason)
			if !strings.Contains(got, tt.mention) {
				t.Errorf("the error does not mention %q: %s", tt.mention, got)
			}
			if n := submittedAttempts(t, lab, quiz.Filter{Class: class}); n != 0 {
				t.Errorf("%d attempts submitted", n)
			}
		})
	}

	// The same attempt twice: stored once, then 409.
	alice := classmate(t, lab, class, "alice")
	v := alice.view(quiz.WatchQuizID)
	req := quizhttp.AttemptRequest{Attempt: v.Attempt, Answers: inView(t, v, allRight())}
	if resp, body := alice.postJSON(watch, req); resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	resp, body := alice.postJSON(watch, req)
	wantStatus(t, resp, body, http.StatusConflict, "Conflict")
	if n := submittedAttempts(t, lab, quiz.Filter{Class: class}); n != 1 {
		t.Errorf("%d attempts submitted, want 1", n)
	}
}

// testBadGrades: a bad submission to the grader gets a clear 4xx and
// nothing is submitted. It counts every attempt on the server, so it runs
// where no test takes a quiz.
func testBadGrades(t *testing.T, lab served) {
	g := grader(t, lab)
	grade := quizhttp.GraderPath + "/grade"
	tests := []struct {
		name, body string
		code       int
		reason     string
		mention    string
	}{
		{"unknown quiz", `{"quiz":"nope","answers":[]}`, 404, "NotFound", "nope"},
		{"no quiz", `{"answers":[]}`, 400, "BadRequest", "name the quiz"},
		{"unknown option", `{"quiz":"apiserver-watch","answers":[{"question":"etcd-raw","choice":"x"}]}`, 422, "Invalid", "answers[0].choice"},
		{"huge body", hugeSubmission(), 413, "RequestEntityTooLarge", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := g.postJSON(grade, tt.body)
			wantStatus(t, resp, got, tt.code, tt.reason)
			if !strings.Contains(got, tt.mention) {
				t.Errorf("the error does not mention %q: %s", tt.mention, got)
			}
			if n := submittedAttempts(t, lab, quiz.Filter{}); n != 0 {
				t.Errorf("%d attempts submitted", n)
			}
		})
	}
}

// testBadForms: the quiz form's errors are pages for a person, with the
// same codes, and nothing stored.
func testBadForms(t *testing.T, lab served) {
	class := ownClass(t)
	alice := classmate(t, lab, class, "alice")
	_, page := alice.get("/quiz/" + quiz.WatchQuizID)
	attempt, _ := formOf(t, page)
	id := idsOf(alice.view(quiz.WatchQuizID)) // the same open attempt
	tests := []struct {
		name    string
		path    string
		form    url.Values
		header  []string
		code    int
		mention string
	}{
		{"unknown quiz", "/quiz/nope", formValues(attempt), nil, 404, "nope"},
		{"unknown option", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "q:gone-410", "reboot"), nil, 422, "reboot"},
		{"two choices", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "q:gone-410", id("gone-410", "etcd-compacted"), "q:gone-410", id("gone-410", "resume-window")), nil, 422, "more than once"},
		{"unknown field", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "student", "bob"), nil, 400, "student"},
		{"bad line", "/quiz/" + quiz.SpotTheBugQuizID, formValues(attempt, "line:wait-for-pod-ready:four", "polling"), nil, 400, "line number"},
		{"huge", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "q:gone-410", strings.Repeat("x", quizhttp.MaxBodyBytes)), nil, 413, "at most"},
		{"made-up attempt", "/quiz/" + quiz.WatchQuizID, formValues("x"), nil, 404, "not issued to you"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alice.t = t
			resp, body := alice.postForm(tt.path, tt.form, tt.header...)
			if resp.StatusCode != tt.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("HTTP %d %s, want %d as a page: %s", resp.StatusCode, resp.Header.Get("Content-Type"), tt.code, body)
			}
			if !strings.Contains(body, tt.mention) || !strings.Contains(strings.ToLower(body), "<!doctype html>") {
				t.Errorf("the page does not mention %q: %s", tt.mention, body)
			}
			if strings.Contains(body, strings.Repeat("x", 100)) {
				t.Error("the page echoes the huge value")
			}
			if n := submittedAttempts(t, lab, quiz.Filter{Class: class}); n != 0 {
				t.Errorf("%d attempts submitted", n)
			}
		})
	}
}

// testStudentsSeeOnlyTheirOwn: another student's attempt is not found.
func testStudentsSeeOnlyTheirOwn(t *testing.T, lab served) {
	class := ownClass(t)
	aliceName := class + "-alice"
	alice, bob := student(t, lab, aliceName, class), classmate(t, lab, class, "bob")
	resp, body := alice.take(quiz.WatchQuizID, allRight())
	var e quiz.Explained
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	path := quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts/" + e.Attempt
	resp, body = bob.get(path)
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	resp, body = bob.get(path + "?student=" + url.QueryEscape(aliceName))
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	if resp, _ := bob.get("/quiz/" + quiz.WatchQuizID + "/attempts/" + e.Attempt); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob reads alice's result page: HTTP %d", resp.StatusCode)
	}
	if resp, body := alice.get(path); resp.StatusCode != http.StatusOK {
		t.Errorf("alice: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp, body := grader(t, lab).get(path + "?student=" + url.QueryEscape(aliceName)); resp.StatusCode != http.StatusOK {
		t.Errorf("grader: HTTP %d: %s", resp.StatusCode, body)
	}
	_, body = bob.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts")
	if strings.Contains(body, e.Attempt) {
		t.Errorf("bob's list holds alice's attempt: %s", body)
	}
}
