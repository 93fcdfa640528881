package classroom_test

import (
	"encoding/json"
	"github.com/kubelab/kubelab/internal/webclient"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const (
	roomInstructorToken = "room-instructor-token-0123456789"
	roomGraderToken     = "room-grader-token-0123456789"
)

// roomDisplayNames reads who the instructor's dashboard and the grader say
// each student is: user name to display name, from each.
func roomDisplayNames(t *testing.T, c *class) (dashboard map[string]string) {
	t.Helper()
	resp, body := webclient.Send(t, http.DefaultClient, "GET", c.URL()+"/kubelab/v1/labs/dashboard", "", "Authorization", "Bearer "+roomInstructorToken)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d %s", resp.StatusCode, body)
	}
	var v struct {
		Students []struct{ User, DisplayName string }
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	dashboard = map[string]string{}
	for _, r := range v.Students {
		dashboard[r.User] = r.DisplayName
	}
	return dashboard
}

// A student cannot change the name another student is shown under, nor
// their own after signing in: the name is kept in the student's record in
// etcd, written once at sign-in; signing in again as the same name makes
// a new student; a form's extra fields name nobody; the namespace is not
// theirs to annotate; whoami takes no writes. Nor can a student read the
// dashboard, anyone's drill-down or the grader's results.
func TestStudentCannotSetAnotherStudentsDisplayName(t *testing.T) {
	t.Parallel()
	c := startClass(t, "--instructor-token", roomInstructorToken, "--grader-token", roomGraderToken)
	base := c.URL()
	somchai := join(t, base, "สมชาย ใจดี")
	mallory := join(t, base, "Mallory")
	if somchai.name != "student" || mallory.name != "mallory" {
		t.Fatalf("names %s, %s", somchai.name, mallory.name)
	}
	want := map[string]string{"student": "สมชาย ใจดี", "mallory": "Mallory"}

	// Signing in again as her name, from Mallory's browser, with fields
	// that try to name Somchai's user or namespace.
	form := url.Values{"name": {"สมชาย ใจดี"}, "code": {joinCode}, "user": {"student"}, "namespace": {"student"}, "displayName": {"Mallory was here"}}
	resp, body := mallory.do(t, "POST", "/signin", form.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
	var again struct{ Name, DisplayName string }
	if err := json.Unmarshal([]byte(body), &again); err != nil || resp.StatusCode != http.StatusCreated || again.Name != "student-2" {
		t.Fatalf("signing in again as her name: %d %s", resp.StatusCode, body)
	}
	want["student-2"] = "สมชาย ใจดี"
	form = url.Values{"name": {"Evil"}, "code": {joinCode}, "user": {"student"}}
	if resp, body := webclient.Send(t, http.DefaultClient, "POST", base+"/signin", form.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json"); resp.StatusCode != http.StatusCreated || !strings.Contains(body, `"name":"evil"`) {
		t.Fatalf("a sign-in naming her user: %d %s", resp.StatusCode, body)
	}
	want["evil"] = "Evil"

	// The namespace is not a student's to annotate, hers or their own.
	for _, ns := range []string{"student", "mallory"} {
		_, stderr, err := mallory.kubectl(t, "annotate", "namespace", ns, "kubelab.io/display-name=Mallory was here")
		if err == nil || !strings.Contains(stderr, "Forbidden") && !strings.Contains(stderr, "forbidden") {
			t.Errorf("annotating namespace %s: %v %s", ns, err, stderr)
		}
	}
	// whoami answers; it takes no writes.
	for _, m := range []string{"PUT", "POST", "PATCH"} {
		resp, _ := mallory.do(t, m, "/kubelab/v1/whoami", `{"displayName":"Mallory was here"}`, "Content-Type", "application/json")
		if resp.StatusCode < 400 {
			t.Errorf("%s whoami: %d", m, resp.StatusCode)
		}
	}

	if got := roomDisplayNames(t, c); len(got) != len(want) {
		t.Errorf("the dashboard lists %v, want %v", got, want)
	} else {
		for user, name := range want {
			if got[user] != name {
				t.Errorf("the dashboard shows %s as %q, want %q", user, got[user], name)
			}
		}
	}
	_, body = somchai.do(t, "GET", "/kubelab/v1/whoami", "")
	if !strings.Contains(body, `"displayName":"สมชาย ใจดี"`) {
		t.Errorf("whoami of Somchai: %s", body)
	}

	// What only instructors and graders read.
	for _, path := range []string{"/kubelab/v1/labs/dashboard", "/kubelab/v1/labs/dashboard/students/student", "/kubelab/v1/labs/dashboard/students/mallory",
		"/kubelab/v1/grader/results", "/kubelab/v1/grader/results.csv", "/kubelab/v1/grader/roster", "/kubelab/v1/grader/roster.csv"} {
		for _, s := range []*student{somchai, mallory} {
			if resp, body := s.do(t, "GET", path, ""); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "สมชาย") {
				t.Errorf("%s's browser reads %s: %d %s", s.name, path, resp.StatusCode, body)
			}
			if resp, body := s.apiDo(t, "GET", path); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "สมชาย") {
				t.Errorf("%s's kubeconfig token reads %s: %d %s", s.name, path, resp.StatusCode, body)
			}
		}
	}
	resp, body = webclient.Send(t, http.DefaultClient, "GET", base+"/kubelab/v1/grader/results.csv", "", "Authorization", "Bearer "+roomGraderToken)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "\ufeffattempt,student,displayName,") {
		t.Errorf("the grader's CSV: %d %s", resp.StatusCode, body)
	}
}
