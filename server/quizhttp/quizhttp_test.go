package quizhttp_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// The lesson's answers, from its answer key.
var right = map[string]string{
	"gone-410":           "compacted-relist",
	"resource-version":   "etcd-revision",
	"initial-added":      "initial-replay",
	"etcd-raw":           "protobuf",
	"crd-vs-aggregation": "where-stored",
}

func allRight() []quiz.Answer {
	var out []quiz.Answer
	for q, o := range right {
		out = append(out, quiz.Answer{Question: q, Choice: o})
	}
	return out
}

func testGraderAuth(t *testing.T, lab served) {
	anon := as{t: t, lab: lab}
	// The admin kubeconfig's user: TestClassroomMode reads the results
	// with that kubeconfig's own token, on a whole kubelab.
	admin := mint(t, lab, server.AdminUser.Name, server.AdminUser.Groups...)
	grade := quiz.Submission{Quiz: quiz.WatchQuizID, Answers: allRight()}
	calls := []struct {
		name string
		do   func(a as) (*http.Response, string)
	}{
		{"results", func(a as) (*http.Response, string) { return a.get(quizhttp.GraderPath + "/results") }},
		{"csv", func(a as) (*http.Response, string) { return a.get(quizhttp.GraderPath + "/results.csv") }},
		{"grade", func(a as) (*http.Response, string) { return a.postJSON(quizhttp.GraderPath+"/grade", grade) }},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			anon.t, admin.t = t, t
			resp, body := call.do(anon)
			wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
			resp, body = call.do(student(t, lab, "alice", "k8s-101"))
			wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
			resp, body = call.do(mint(t, lab, "someone"))
			wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
			for _, who := range []as{grader(t, lab), mint(t, lab, "teacher", classroom.InstructorGroup), admin} {
				if resp, body := call.do(who); resp.StatusCode != http.StatusOK {
					t.Errorf("HTTP %d: %s", resp.StatusCode, body)
				}
			}
		})
	}
}

// A student put in the graders' group by mistake still cannot grade.
func testGraderRefusesStudentsInTheGraderGroup(t *testing.T, lab served) {
	alice := mint(t, lab, "alice", classroom.StudentGroup, classroom.GraderGroup)
	resp, body := alice.get(quizhttp.GraderPath + "/results")
	wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
	if !strings.Contains(body, "only instructors and graders") {
		t.Errorf("not the grader's own check: %s", body)
	}
}

func TestResultsAndCSV(t *testing.T) {
	t.Parallel()
	// A server of its own: the unfiltered results are every attempt on it.
	lab := startQuiz(t, policyOf())
	alice, bob, carol := student(t, lab, "alice", "a"), student(t, lab, "bob", "a"), student(t, lab, "carol", "b")
	submit := func(s as, quizID string, answers []quiz.Answer) quiz.Explained {
		t.Helper()
		resp, body := s.take(quizID, answers)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("submit: HTTP %d: %s", resp.StatusCode, body)
		}
		var e quiz.Explained
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	submit(alice, quiz.WatchQuizID, allRight())
	submit(alice, quiz.WatchQuizID, allRight()[:2])
	submit(bob, quiz.SpotTheBugQuizID, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 4, Reason: "etcd-direct"}}}})
	submit(carol, quiz.WatchQuizID, nil)

	g := grader(t, lab)
	list := func(query string) quizhttp.ScoreList {
		t.Helper()
		resp, body := g.get(quizhttp.GraderPath + "/results" + query)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
		}
		var l quizhttp.ScoreList
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	all := list("")
	if len(all.Items) != 4 {
		t.Fatalf("all results: %+v", all)
	}
	first := all.Items[0]
	if first.Student != "alice" || first.UserID != "alice" || first.Class != "a" || first.Quiz != quiz.WatchQuizID ||
		first.ScoreMaximum != 5 || first.GradingProgress != "FullyGraded" || first.ActivityProgress != "Completed" || len(first.Questions) != 5 {
		t.Errorf("first score: %+v", first)
	}
	if all.Items[0].ScoreGiven != 5 || all.Items[1].ScoreGiven != 2 || all.Items[0].Number != 1 || all.Items[1].Number != 2 {
		t.Errorf("alice's attempts: %+v, want 1 scoring 5 then 2 scoring 2", all.Items[:2])
	}
	if len(all.Summaries) != 3 || all.Summaries[0].Student != "alice" || all.Summaries[0].Attempts != 2 ||
		all.Summaries[0].First.Number != 1 || all.Summaries[0].Last.Number != 2 || all.Summaries[0].Best.ScoreGiven != 5 {
		t.Errorf("summaries: %+v", all.Summaries)
	}
	for _, s := range all.Items {
		if !strings.HasSuffix(s.Timestamp, "Z") || len(s.Timestamp) != len("2006-01-02T15:04:05.000Z") {
			t.Errorf("timestamp %q is not ISO 8601 UTC with milliseconds", s.Timestamp)
		}
	}
	for query, want := range map[string][]string{
		"?class=a":                         {"alice", "alice", "bob"},
		"?class=b":                         {"carol"},
		"?student=bob":                     {"bob"},
		"?quiz=" + quiz.WatchQuizID:        {"alice", "alice", "carol"},
		"?class=a&quiz=spot-the-bug":       {"bob"},
		"?student=alice&quiz=spot-the-bug": nil,
	} {
		var got []string
		for _, s := range list(query).Items {
			got = append(got, s.Student)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
	resp, body := g.get(quizhttp.GraderPath + "/results?quiz=nope")
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")

	resp, body = g.get(quizhttp.GraderPath + "/results.csv?quiz=" + quiz.WatchQuizID)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0][1] != "student" || rows[0][2] != "displayName" || rows[0][5] != "number" || rows[0][6] != "issued" || len(rows[0]) != 10+5 || rows[0][10] != quiz.WatchQuizID+"/gone-410" {
		t.Fatalf("csv rows: %q", rows)
	}
	if rows[1][1] != "alice" || rows[1][5] != "1" || rows[2][5] != "2" || rows[1][8] != "5" || rows[1][9] != "5" || rows[3][1] != "carol" || rows[3][8] != "0" {
		t.Errorf("csv rows: %q", rows)
	}
}

func testGradeStoresNothing(t *testing.T, lab served) {
	g := grader(t, lab)
	resp, body := g.postJSON(quizhttp.GraderPath+"/grade", quiz.Submission{Quiz: quiz.SpotTheBugQuizID, Answers: []quiz.Answer{
		{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 4, Reason: "etcd-direct"}, {Line: 6, Reason: "polling"}, {Line: 5, Reason: "running-not-ready"}, {Line: 3, Reason: "no-timeout"}}},
	}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	var r quizhttp.GradeResult
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r.ScoreGiven != 4 || r.ScoreMaximum != 4 || !r.Questions[0].Correct || r.GradingProgress != "FullyGraded" {
		t.Errorf("graded: %+v", r)
	}
	if n := storedAttempts(t, lab); n != 0 {
		t.Errorf("grading stored %d attempts", n)
	}
}

func formValues(attempt string, kv ...string) url.Values {
	v := url.Values{"attempt": {attempt}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// A name a spreadsheet would run as a formula is exported as text. The
// name must begin with "=", so it is not named after the test; no other
// test takes it.
func testCSVDoesNotExportFormulas(t *testing.T, lab served) {
	class := ownClass(t)
	mallory := student(t, lab, "=HYPERLINK(\"http://evil.example\")", class)
	if resp, body := mallory.take(quiz.WatchQuizID, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	_, body := grader(t, lab).get(quizhttp.GraderPath + "/results.csv?class=" + url.QueryEscape(class))
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %q, %v", rows, err)
	}
	if rows[1][1] != `'=HYPERLINK("http://evil.example")` {
		t.Errorf("student cell %q", rows[1][1])
	}
}

// A mistyped ?class= answered 200 with an empty list, which a grader reads
// as a class with no attempts. A class that is not this kubelab's and has
// no attempt at all is 404; one with attempts answers, even filtered to a
// quiz none of them took.
func testUnknownClassIsNotFound(t *testing.T, lab served) {
	class := ownClass(t)
	g := grader(t, lab)
	for _, path := range []string{"/results", "/results.csv"} {
		resp, body := g.get(quizhttp.GraderPath + path + "?class=" + url.QueryEscape(class))
		wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
		if !strings.Contains(body, class) {
			t.Errorf("%s: the 404 does not name the class: %s", path, body)
		}
	}
	if resp, body := classmate(t, lab, class, "alice").take(quiz.WatchQuizID, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	for query, want := range map[string]int{"": 1, "&quiz=" + quiz.SpotTheBugQuizID: 0} {
		resp, body := g.get(quizhttp.GraderPath + "/results?class=" + url.QueryEscape(class) + query)
		var list quizhttp.ScoreList
		if err := json.Unmarshal([]byte(body), &list); err != nil || resp.StatusCode != http.StatusOK || len(list.Items) != want {
			t.Errorf("?class=%s%s: HTTP %d, want %d items: %s", class, query, resp.StatusCode, want, body)
		}
	}
}
