package quizhttp_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// TestBadSubmissions: each gets a clear 4xx and nothing is stored, through
// the grader, the quiz API and the quiz form alike.
func TestBadSubmissions(t *testing.T) {
	lab := kubelabtest.Start(t)
	alice, g := student(t, lab, "alice", "a"), grader(t, lab)
	huge := `{"answers":[{"question":"gone-410","choice":"` + strings.Repeat("x", quizhttp.MaxBodyBytes) + `"}]}`
	watch := quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts"
	spot := quizhttp.QuizzesPath + "/" + quiz.SpotTheBugQuizID + "/attempts"
	tests := []struct {
		name, path string
		body       string
		code       int
		reason     string
		mention    string
	}{
		{"unknown quiz", quizhttp.QuizzesPath + "/nope/attempts", `{"answers":[]}`, 404, "NotFound", "nope"},
		{"unknown option", watch, `{"answers":[{"question":"gone-410","choice":"reboot"}]}`, 422, "Invalid", "answers[0].choice"},
		{"unknown question", watch, `{"answers":[{"question":"why","choice":"reboot"}]}`, 422, "Invalid", "answers[0].question"},
		{"duplicate answers", watch, `{"answers":[{"question":"gone-410","choice":"cluster-broken"},{"question":"gone-410","choice":"compacted-relist"}]}`, 422, "Invalid", "answers[1].question"},
		{"line marked twice", spot, `{"answers":[{"question":"wait-for-pod-ready","marks":[{"line":4,"reason":"etcd-direct"},{"line":4,"reason":"polling"}]}]}`, 422, "Invalid", "answers[0].marks[1].line"},
		{"line out of range", spot, `{"answers":[{"question":"wait-for-pod-ready","marks":[{"line":99,"reason":"polling"}]}]}`, 422, "Invalid", "lines 1 to 8"},
		{"unknown reason", spot, `{"answers":[{"question":"wait-for-pod-ready","marks":[{"line":4,"reason":"slow"}]}]}`, 422, "Invalid", "slow"},
		{"huge body", watch, huge, 413, "RequestEntityTooLarge", "at most"},
		{"not JSON", watch, `answers=gone-410`, 400, "BadRequest", "not a valid submission"},
		{"unknown field", watch, `{"answers":[],"student":"bob"}`, 400, "BadRequest", "student"},
		{"two values", watch, `{"answers":[]} {"answers":[]}`, 400, "BadRequest", "more than one"},
		{"bad attempt id", watch, `{"attempt":"../../x","answers":[]}`, 400, "BadRequest", "attempt"},
		{"grader: unknown quiz", quizhttp.GraderPath + "/grade", `{"quiz":"nope","answers":[]}`, 404, "NotFound", "nope"},
		{"grader: no quiz", quizhttp.GraderPath + "/grade", `{"answers":[]}`, 400, "BadRequest", "name the quiz"},
		{"grader: unknown option", quizhttp.GraderPath + "/grade", `{"quiz":"apiserver-watch","answers":[{"question":"etcd-raw","choice":"x"}]}`, 422, "Invalid", "answers[0].choice"},
		{"grader: huge body", quizhttp.GraderPath + "/grade", huge, 413, "RequestEntityTooLarge", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			who := alice
			if strings.HasPrefix(tt.path, quizhttp.GraderPath) {
				who = g
			}
			who.t = t
			resp, body := who.postJSON(tt.path, tt.body)
			wantStatus(t, resp, body, tt.code, tt.reason)
			if !strings.Contains(body, tt.mention) {
				t.Errorf("the error does not mention %q: %s", tt.mention, body)
			}
			if n := storedAttempts(t, lab); n != 0 {
				t.Errorf("%d attempts stored", n)
			}
		})
	}

	// The same attempt twice: stored once, then 409.
	req := quizhttp.AttemptRequest{Attempt: quiz.NewAttemptID(time.Now()), Answers: allRight()}
	if resp, body := alice.postJSON(watch, req); resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	resp, body := alice.postJSON(watch, req)
	wantStatus(t, resp, body, http.StatusConflict, "AlreadyExists")
	if n := storedAttempts(t, lab); n != 1 {
		t.Errorf("%d attempts stored, want 1", n)
	}
}

// TestBadForms: the quiz form's errors are pages for a person, with the
// same codes, and nothing stored.
func TestBadForms(t *testing.T) {
	lab := kubelabtest.Start(t)
	alice := student(t, lab, "alice", "a")
	_, page := alice.get("/quiz/" + quiz.WatchQuizID)
	attempt, _ := formOf(t, page)
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
		{"two choices", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "q:gone-410", "cluster-broken", "q:gone-410", "pod-gone"), nil, 422, "more than once"},
		{"unknown field", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "student", "bob"), nil, 400, "student"},
		{"bad line", "/quiz/" + quiz.SpotTheBugQuizID, formValues(attempt, "line:wait-for-pod-ready:four", "polling"), nil, 400, "line number"},
		{"huge", "/quiz/" + quiz.WatchQuizID, formValues(attempt, "q:gone-410", strings.Repeat("x", quizhttp.MaxBodyBytes)), nil, 413, "at most"},
		{"bad attempt", "/quiz/" + quiz.WatchQuizID, formValues("x"), nil, 400, "attempt"},
		{"cross-site", "/quiz/" + quiz.WatchQuizID, formValues(attempt), []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403, "another site"},
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
			if n := storedAttempts(t, lab); n != 0 {
				t.Errorf("%d attempts stored", n)
			}
		})
	}
}

// TestStudentsSeeOnlyTheirOwn: another student's attempt is not found.
func TestStudentsSeeOnlyTheirOwn(t *testing.T) {
	lab := kubelabtest.Start(t)
	alice, bob := student(t, lab, "alice", "a"), student(t, lab, "bob", "a")
	resp, body := alice.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", quizhttp.AttemptRequest{Answers: allRight()})
	var e quiz.Explained
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	path := quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts/" + e.Attempt
	resp, body = bob.get(path)
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	resp, body = bob.get(path + "?student=alice")
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	if resp, _ := bob.get("/quiz/" + quiz.WatchQuizID + "/attempts/" + e.Attempt); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob reads alice's result page: HTTP %d", resp.StatusCode)
	}
	if resp, body := alice.get(path); resp.StatusCode != http.StatusOK {
		t.Errorf("alice: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp, body := grader(t, lab).get(path + "?student=alice"); resp.StatusCode != http.StatusOK {
		t.Errorf("grader: HTTP %d: %s", resp.StatusCode, body)
	}
	_, body = bob.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID + "/attempts")
	if strings.Contains(body, e.Attempt) {
		t.Errorf("bob's list holds alice's attempt: %s", body)
	}
}
