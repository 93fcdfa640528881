package quizhttp_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// joined signs display in to the class as the sign-in page does, and
// returns the student and their user name.
func joined(t *testing.T, lab *kubelabtest.Lab, display string) (as, string) {
	t.Helper()
	st, token, err := lab.Class().Join(context.Background(), display, "", "")
	if err != nil {
		t.Fatalf("join as %q: %v", display, err)
	}
	return as{t: t, lab: lab, token: token}, st.Name
}

// The grader's JSON and CSV carry each student's display name as typed
// beside the user name (a Thai name's user is "student"), and the CSV
// keeps names a spreadsheet would run as formulas as text; students read
// none of it.
func TestGraderShowsDisplayNamesAsTyped(t *testing.T) {
	t.Parallel()
	// A server of its own: a class, and the unfiltered results are every attempt on it.
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.SecureListen = "127.0.0.1:0"
		c.GraderToken = "grader-token-0123456789"
	})
	names := []string{"สมชาย ใจดี", `=HYPERLINK("http://evil.example","x")`, "+1+cmd", "-2+3", "@SUM(A1)", "Alice"}
	users := map[string]string{}
	var somchai as
	for _, n := range names {
		s, user := joined(t, lab, n)
		users[user] = n
		if n == names[0] {
			somchai = s
			if user != "student" {
				t.Fatalf("the Thai name's user is %q, want student", user)
			}
		}
		if resp, body := s.take(quiz.WatchQuizID, allRight()); resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: HTTP %d: %s", n, resp.StatusCode, body)
		}
	}
	g := as{t: t, lab: lab, token: "grader-token-0123456789"}

	resp, body := g.get(quizhttp.GraderPath + "/results")
	var list quizhttp.ScoreList
	if err := json.Unmarshal([]byte(body), &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("results: HTTP %d: %s", resp.StatusCode, body)
	}
	if len(list.Items) != len(names) || len(list.Summaries) != len(names) {
		t.Fatalf("%d items, %d summaries, want %d: %s", len(list.Items), len(list.Summaries), len(names), body)
	}
	for i, it := range list.Items {
		if want := users[it.Student]; it.DisplayName != want || list.Summaries[i].DisplayName != users[list.Summaries[i].Student] {
			t.Errorf("%s: display name %q (summary %q), want %q", it.Student, it.DisplayName, list.Summaries[i].DisplayName, want)
		}
	}
	if !strings.Contains(body, `"displayName":"สมชาย ใจดี"`) {
		t.Errorf("the Thai name is not in the JSON as typed: %s", body)
	}

	resp, body = g.get(quizhttp.GraderPath + "/results.csv")
	// Excel takes UTF-8 for what it is only after a byte-order mark.
	body, bom := strings.CutPrefix(body, "\ufeff")
	if !bom {
		t.Errorf("the CSV does not begin with a byte-order mark, so Excel shows the Thai name as mojibake: %q", body[:min(len(body), 20)])
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK || len(rows) != len(names)+1 {
		t.Fatalf("csv: HTTP %d, %q, %v", resp.StatusCode, rows, err)
	}
	if rows[0][1] != "student" || rows[0][2] != "displayName" {
		t.Fatalf("csv header %q", rows[0])
	}
	for _, row := range rows[1:] {
		typed := users[row[1]]
		want := typed
		if strings.ContainsAny(typed[:1], "=+-@") {
			want = "'" + typed
		}
		if row[2] != want {
			t.Errorf("csv display name of %s: %q, want %q", row[1], row[2], want)
		}
		for _, cell := range row {
			if cell != "" && strings.ContainsAny(cell[:1], "=+@") {
				t.Errorf("csv cell %q of %s would run as a formula", cell, row[1])
			}
		}
	}

	// A student reads no one's results, not even their own, by either door.
	for _, path := range []string{"/results", "/results.csv", "/results?student=student"} {
		resp, body := somchai.get(quizhttp.GraderPath + path)
		wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
	}
}
