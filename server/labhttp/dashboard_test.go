package labhttp_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// Only instructors and admins see the class: no session is 401 (a sign-in
// form in a browser), a student 403 (a friendly page), the instructor's
// token or session 200.
func TestDashboardAuth(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	anon := user{t: t, lab: lab}
	alice := student(t, lab, "alice")
	teacher := instructor(t, lab)

	resp, body := anon.get(labhttp.APIPath + "/dashboard")
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
	resp, body = anon.do("GET", labhttp.DashboardPath, "", "", "Accept", "text/html")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) {
		t.Errorf("anonymous browser: HTTP %d, want 401 with the token form:\n%s", resp.StatusCode, body)
	}
	resp, body = alice.get(labhttp.APIPath + "/dashboard")
	wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
	resp, body = alice.inBrowser().do("GET", labhttp.DashboardPath, "", "", "Accept", "text/html")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "For instructors only") || strings.Contains(body, `data-dashboard`) {
		t.Errorf("student's browser: HTTP %d, want the friendly 403:\n%s", resp.StatusCode, body)
	}
	if resp, body := teacher.get(labhttp.APIPath + "/dashboard"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"students"`) {
		t.Errorf("instructor: HTTP %d: %s", resp.StatusCode, body)
	}
	admin := mint(t, lab, "root", "system:masters")
	if resp, body := admin.get(labhttp.APIPath + "/dashboard"); resp.StatusCode != http.StatusOK {
		t.Errorf("admin: HTTP %d: %s", resp.StatusCode, body)
	}
	grader := mint(t, lab, "lms", "kubelab:graders")
	resp, body = grader.get(labhttp.APIPath + "/dashboard")
	wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")

	// The browser sign-in: a student's token is refused, the instructor's
	// becomes the session.
	form := func(token string) (*http.Response, string) {
		return anon.do("POST", labhttp.DashboardPath+"/signin", "application/x-www-form-urlencoded", url.Values{"token": {token}}.Encode())
	}
	if resp, _ := form(alice.token); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a student's token: HTTP %d, want 403", resp.StatusCode)
	}
	if resp, _ := form("not-a-token"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: HTTP %d, want 401", resp.StatusCode)
	}
	resp, _ = form(instructorToken)
	var session string
	for _, c := range resp.Cookies() {
		if c.Name == authn.SessionCookie {
			session = c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == "" || session == instructorToken {
		t.Fatalf("instructor's token: HTTP %d, session %q", resp.StatusCode, session)
	}
	inBrowser := user{t: t, lab: lab, token: session, browser: true}
	if resp, body := inBrowser.do("GET", labhttp.DashboardPath, "", "", "Accept", "text/html"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "data-dashboard") {
		t.Errorf("instructor's browser: HTTP %d:\n%s", resp.StatusCode, body)
	}
}

// The dashboard's websocket shows a student's step as soon as it passes,
// with quiz scores, and marks students without progress as stuck.
func TestDashboardLive(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.StuckAfter = time.Hour })
	teacher := instructor(t, lab)
	alice := student(t, lab, "alice")
	// A student's page may not open the class's stream.
	h := http.Header{}
	alice.auth(h)
	if resp, _ := alice.do("GET", labhttp.APIPath+"/ws?dashboard=1", "", "", "Connection", "Upgrade", "Upgrade", "websocket",
		"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="); resp.StatusCode != http.StatusForbidden {
		t.Errorf("student on the dashboard's websocket: HTTP %d", resp.StatusCode)
	}

	ws := teacher.dial(labhttp.APIPath + "/ws?dashboard=1")
	next := func(what string, ok func(*labhttp.ClassView) bool) *labhttp.ClassView {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			var m struct {
				T     string             `json:"t"`
				Class *labhttp.ClassView `json:"class"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.T == "class" && ok(m.Class) {
				return m.Class
			}
		}
	}
	row := func(v *labhttp.ClassView, name string) *labhttp.StudentRow {
		for i := range v.Students {
			if v.Students[i].User == name {
				return &v.Students[i]
			}
		}
		return nil
	}
	// Alice joined but has not started a lab: listed, for attendance.
	next("the first snapshot, alice joined", func(v *labhttp.ClassView) bool {
		r := row(v, "alice")
		return r != nil && r.Lab == "" && r.Joined != nil && r.DisplayName == "alice" && r.Updated == nil && !r.Stuck
	})
	alice.start("discovery")
	next("alice on step 1", func(v *labhttp.ClassView) bool {
		r := row(v, "alice")
		return r != nil && r.Lab == "discovery" && r.Step == 1 && !r.Stuck
	})
	alice.get("/apis")
	v := next("alice on step 2", func(v *labhttp.ClassView) bool {
		r := row(v, "alice")
		return r != nil && r.Step == 2 && r.StepTitle == "Read the OpenAPI schema"
	})
	if r := row(v, "alice"); r.LabsDone != 0 || r.Steps != 2 {
		t.Errorf("row %+v", r)
	}
	_, view := alice.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID) // issues her an attempt
	var issued quiz.View
	json.Unmarshal([]byte(view), &issued)
	if resp, body := alice.post(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", `{"attempt":"`+issued.Attempt+`","answers":[]}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("quiz: HTTP %d: %s", resp.StatusCode, body)
	}
	alice.get("/openapi/v3")
	v = next("alice done, with her quiz", func(v *labhttp.ClassView) bool {
		r := row(v, "alice")
		return r != nil && r.Done && r.LabsDone == 1
	})
	if q, ok := row(v, "alice").Quizzes[quiz.WatchQuizID]; !ok || q.Attempts != 1 || q.ScoreMaximum == 0 {
		t.Errorf("quiz score: %+v", row(v, "alice").Quizzes)
	}
}

// A student who makes no progress for StuckAfter is marked stuck.
func TestDashboardStuck(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.StuckAfter = time.Millisecond })
	alice, bob := student(t, lab, "alice"), student(t, lab, "bob")
	alice.start("watch")
	bob.start("discovery")
	bob.get("/apis")
	bob.waitPassed("discovery", "groups")
	bob.get("/openapi/v3")
	bob.waitPassed("discovery", "openapi")
	time.Sleep(5 * time.Millisecond)
	_, body := instructor(t, lab).get(labhttp.APIPath + "/dashboard")
	var v labhttp.ClassView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	stuck := map[string]bool{}
	for _, r := range v.Students {
		stuck[r.User] = r.Stuck
	}
	if !stuck["alice"] || stuck["bob"] {
		t.Errorf("stuck: %v, want alice (no progress) but not bob (finished his lab)", stuck)
	}
}

// TestDashboardShowsSameNamesApart: a throwaway account could sign in as
// "bob" beside Bob and pass for him on the room. Names that read the same
// (case, full-width letters, spaces) are flagged on each such row, with
// the user names that tell them apart.
func TestDashboardShowsSameNamesApart(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	for _, name := range []string{"Bob Lee", "bob  lee", "Ｂｏｂ Ｌｅｅ", "Alice"} {
		student(t, lab, name)
	}
	_, body := instructor(t, lab).get(labhttp.APIPath + "/dashboard")
	var v labhttp.ClassView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	same := map[string]string{}
	for _, r := range v.Students {
		same[r.User] = strings.Join(r.SameNameAs, ",")
	}
	want := map[string]string{"alice": "", "bob-lee": "bob-lee-2,student", "bob-lee-2": "bob-lee,student", "student": "bob-lee,bob-lee-2"}
	if !maps.Equal(same, want) {
		t.Errorf("same names: %v, want %v", same, want)
	}
	resp, html := instructor(t, lab).inBrowser().do("GET", labhttp.DashboardPath+"?lang=th", "", "", "Accept", "text/html")
	if !strings.Contains(html, "ไม่มีความคืบหน้ามา 10 นาที") || strings.Contains(html, "10m0s") {
		t.Errorf("the room in Thai does not say --stuck-after in Thai words")
	}
	if resp.StatusCode != http.StatusOK || strings.Count(html, "data-same-name") != 3 || !strings.Contains(html, "ชื่อซ้ำกับ") {
		t.Errorf("the room in Thai: %d, %d rows flagged; want 3, saying ชื่อซ้ำกับ", resp.StatusCode, strings.Count(html, "data-same-name"))
	}
}
