package quizhttp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// TestAttemptsSurviveRestart: a server started again on the etcd data an
// earlier one left serves the attempts stored there, to the grader and to
// the student whose token it minted.
func TestAttemptsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	onDir := func(c *apitest.Config) { c.EtcdDataDir = dir }
	var (
		alice as
		e     quiz.Explained
	)
	// The first server and its etcd stop when the subtest ends.
	t.Run("Before", func(t *testing.T) {
		lab := startQuiz(t, policyOf(), onDir)
		alice = student(t, lab, "alice", "a")
		resp, body := alice.take(quiz.WatchQuizID, allRight())
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatal(err)
		}
	})
	if t.Failed() {
		return
	}

	lab := startQuiz(t, policyOf(), onDir)
	resp, body := grader(t, lab).get(quizhttp.GraderPath + "/results?student=alice")
	var l quizhttp.ScoreList
	if err := json.Unmarshal([]byte(body), &l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	if len(l.Items) != 1 || l.Items[0].AttemptID != e.Attempt || l.Items[0].ScoreGiven != 5 {
		t.Errorf("after restart: %+v, want attempt %s scoring 5", l.Items, e.Attempt)
	}
	// Alice's token was minted into etcd too, so she reads her result.
	alice.t, alice.lab = t, lab
	resp, body = alice.get("/quiz/" + quiz.WatchQuizID + "/attempts/" + e.Attempt)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "5 / 5") {
		t.Errorf("result page after restart: HTTP %d", resp.StatusCode)
	}
}
