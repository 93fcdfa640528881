package quizhttp_test

import (
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// TestClassroomMode: in a class nobody takes a quiz anonymously, and the
// instructor's, grader's and admin's tokens read the results.
func TestClassroomMode(t *testing.T) {
	t.Parallel()
	// A server of its own: a class, and it counts every attempt stored.
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.SecureListen = "127.0.0.1:0"
		c.GraderToken = "grader-token-0123456789"
		c.InstructorToken = "instructor-token-0123456789"
	})
	anon := as{t: t, lab: lab}
	resp, body := anon.postJSON(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", quizhttp.AttemptRequest{Attempt: "0123456789abcdef", Answers: allRight()})
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
	resp, body = anon.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID)
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
	resp, body = anon.postForm("/quiz/"+quiz.WatchQuizID, url.Values{"attempt": {"0123456789abcdef"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `href="/signin?lang=en"`) {
		t.Errorf("anonymous form: HTTP %d, want 401 with a way to sign in: %s", resp.StatusCode, body)
	}
	resp, _ = anon.do("GET", "/quiz/"+quiz.WatchQuizID, "", nil, "Accept", "text/html")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin") {
		t.Errorf("anonymous browser: HTTP %d to %q, want sent to sign in", resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := storedAttempts(t, lab); n != 0 {
		t.Errorf("%d attempts stored", n)
	}

	alice := student(t, lab, "alice", "a")
	if resp, body := alice.take(quiz.WatchQuizID, allRight()); resp.StatusCode != http.StatusCreated {
		t.Fatalf("alice: HTTP %d: %s", resp.StatusCode, body)
	}
	// The grader's, the instructor's and the admin kubeconfig's tokens:
	// the tests on the API behind the front door mint tokens for their users.
	adminToken, err := readAdminToken(lab)
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"grader-token-0123456789", "instructor-token-0123456789", adminToken} {
		who := as{t: t, lab: lab, token: token}
		resp, body := who.get(quizhttp.GraderPath + "/results")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"student":"alice"`) {
			t.Errorf("HTTP %d: %s", resp.StatusCode, body)
		}
	}
	resp, body = anon.get(quizhttp.GraderPath + "/results")
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
}

// readAdminToken is the admin kubeconfig's bearer token (system:masters).
func readAdminToken(lab *kubelabtest.Lab) (string, error) {
	b, err := os.ReadFile(lab.KubeconfigPath())
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return "", err
	}
	for _, a := range cfg.AuthInfos {
		return strings.TrimSpace(a.Token), nil
	}
	return "", os.ErrNotExist
}
