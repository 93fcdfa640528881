package classroom_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/webclient"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// TestGraderRosterListsEveryStudent: the grader's results listed attempts
// only, so a student who joined and took no quiz was missing, and lab
// progress was nowhere. The roster lists every student who joined, with
// their quizzes (first, last and best) and their labs (steps passed, when
// finished), as JSON and as a CSV a gradebook imports: one row a student,
// the same columns every time, a byte-order mark for Thai names. Every
// JSON answer is what docs/grader.openapi.json says it is.
func TestGraderRosterListsEveryStudent(t *testing.T) {
	t.Parallel()
	c := startClass(t, "--class-name", "k8s-101", "--instructor-token", roomInstructorToken, "--grader-token", roomGraderToken)
	join(t, c.URL(), "Alice") // joined, and does nothing else
	bob, somchai := join(t, c.URL(), "Bob"), join(t, c.URL(), "สมชาย ใจดี")
	id := quiz.WatchQuizID
	for _, right := range []bool{false, true} {
		v := viewQuiz(t, bob, id)
		if resp, body := submitQuiz(t, bob, id, v.Attempt, answersFor(t, v, len(v.Questions), right)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("bob's attempt: %d %s", resp.StatusCode, body)
		}
	}
	first := labs.All()[0]
	if resp, body := somchai.do(t, "POST", "/kubelab/v1/labs/"+first.ID+"/start", "", "Content-Type", "application/json"); resp.StatusCode >= 300 {
		t.Fatalf("starting lab %s: %d %s", first.ID, resp.StatusCode, body)
	}

	grader := []string{"Authorization", "Bearer " + roomGraderToken}
	resp, body := webclient.Send(t, http.DefaultClient, "GET", c.URL()+quizhttp.GraderPath+"/roster?class=k8s-101", "", grader...)
	var roster quizhttp.Roster
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &roster) != nil || roster.Kind != "StudentRoster" {
		t.Fatalf("the roster: %d %s", resp.StatusCode, body)
	}
	wantGraderSchema(t, "StudentRoster", body)
	resp, results := webclient.Send(t, http.DefaultClient, "GET", c.URL()+quizhttp.GraderPath+"/results?class=k8s-101", "", grader...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the results: %d %s", resp.StatusCode, results)
	}
	wantGraderSchema(t, "QuizScoreList", results)
	got := map[string]quizhttp.RosterEntry{}
	for _, e := range roster.Items {
		got[e.Student] = e
	}
	if len(got) != 3 || got["alice"].DisplayName != "Alice" || got["alice"].Joined == "" || len(got["alice"].Quizzes)+len(got["alice"].Labs) != 0 {
		t.Errorf("the roster's students: %s", body)
	}
	if q := got["bob"].Quizzes; len(q) != 1 || q[0].Attempts != 2 || q[0].First.ScoreGiven >= q[0].Best.ScoreGiven || q[0].Last.AttemptID != q[0].Best.AttemptID {
		t.Errorf("bob's quizzes, a wrong then a right attempt: %+v", q)
	}
	if l := got["student"].Labs; got["student"].DisplayName != "สมชาย ใจดี" || len(l) != 1 || l[0].Lab != first.ID || l[0].Number != 1 || l[0].StepsDone != 0 || l[0].Steps != len(first.Steps) || l[0].Finished != "" {
		t.Errorf("สมชาย's labs, one started: %+v", got["student"])
	}

	resp, body = webclient.Send(t, http.DefaultClient, "GET", c.URL()+quizhttp.GraderPath+"/roster.csv", "", grader...)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "\ufeff") {
		t.Fatalf("the roster's CSV: %d %.200s", resp.StatusCode, body)
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\ufeff"))).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("the roster's CSV, a header and 3 students: %v\n%s", err, body)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	lab1 := "lab1-" + first.ID + "/steps"
	for _, h := range []string{"student", "displayName", "class", "joined", id + "/attempts", id + "/best", lab1} {
		if _, ok := col[h]; !ok {
			t.Errorf("the CSV has no column %q: %v", h, rows[0])
		}
	}
	// A spreadsheet opens it with every student, and Thai as typed.
	if sheet := openInSpreadsheet(t, body); len(sheet) != len(rows) || len(sheet[0]) != len(rows[0]) || sheet[0][0] != "student" {
		t.Errorf("the roster in a spreadsheet: %d rows of %d columns, want %d of %d: %q", len(sheet), len(sheet[0]), len(rows), len(rows[0]), sheet)
	} else if !slices.ContainsFunc(sheet, func(r []string) bool { return r[col["displayName"]] == "สมชาย ใจดี" }) {
		t.Errorf("the roster in a spreadsheet has no สมชาย ใจดี: %q", sheet)
	}
	byStudent := map[string][]string{}
	for _, r := range rows[1:] {
		byStudent[r[col["student"]]] = r
	}
	if r := byStudent["student"]; r == nil || r[col["displayName"]] != "สมชาย ใจดี" || r[col[lab1]] != "0" {
		t.Errorf("สมชาย's row: %v", r)
	}
	if r := byStudent["bob"]; r == nil || r[col[id+"/attempts"]] != "2" || r[col[id+"/best"]] != "5" {
		t.Errorf("bob's row: %v", r)
	}
	if r := byStudent["alice"]; r == nil || r[col[id+"/attempts"]] != "0" || r[col["class"]] != "k8s-101" {
		t.Errorf("alice's row: %v", r)
	}

	// A mistyped class is a 404, and a student reads no roster.
	if resp, body := webclient.Send(t, http.DefaultClient, "GET", c.URL()+quizhttp.GraderPath+"/roster?class=k8s-10", "", grader...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the roster of a mistyped class: %d %s", resp.StatusCode, body)
	} else {
		wantGraderSchema(t, "Status", body)
	}
	// The grader grades with the bank's own ids.
	bank, _ := quiz.Lesson().Quiz(id)
	var answers []quiz.Answer
	for _, qu := range bank.Questions {
		answers = append(answers, quiz.Answer{Question: qu.ID, Choice: qu.Answer})
	}
	sub, _ := json.Marshal(map[string]any{"quiz": id, "answers": answers})
	if resp, body := webclient.Send(t, http.DefaultClient, "POST", c.URL()+quizhttp.GraderPath+"/grade", string(sub), append(grader, "Content-Type", "application/json")...); resp.StatusCode != http.StatusOK {
		t.Errorf("grading a submission: %d %s", resp.StatusCode, body)
	} else {
		wantGraderSchema(t, "QuizResult", body)
	}
	for _, path := range []string{"/roster", "/roster.csv"} {
		if resp, body := bob.apiDo(t, "GET", quizhttp.GraderPath+path); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "สมชาย") {
			t.Errorf("a student reads %s: %d %s", path, resp.StatusCode, body)
		}
	}
}
