package labhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// takeQuiz submits the watch quiz as u, with no answers.
func (u user) takeQuiz() {
	u.t.Helper()
	_, view := u.get(quizhttp.QuizzesPath + "/" + quiz.WatchQuizID)
	var issued quiz.View
	if err := json.Unmarshal([]byte(view), &issued); err != nil {
		u.t.Fatalf("quiz view: %v: %s", err, view)
	}
	if resp, body := u.post(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", `{"attempt":"`+issued.Attempt+`","answers":[]}`); resp.StatusCode != http.StatusCreated {
		u.t.Fatalf("quiz: HTTP %d: %s", resp.StatusCode, body)
	}
}

// The drill-down into one student is the instructor's: it shows the
// student's steps, recent requests and quiz attempts under the name they
// typed; a student (about anyone, themselves included), a grader and an
// anonymous browser are refused before anything is read.
func TestStudentDrillDown(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.GraderToken = "grader-token-0123456789" })
	st, token, err := lab.Class().Join(context.Background(), "สมชาย ใจดี", "", "")
	if err != nil {
		t.Fatal(err)
	}
	somchai := user{t: t, lab: lab, name: st.Name, token: token}
	bob := student(t, lab, "bob")
	teacher := instructor(t, lab)
	somchai.start("discovery")
	somchai.get("/apis")
	somchai.waitPassed("discovery", "groups")
	somchai.get("/api/v1/namespaces/bob/pods") // refused: bob's namespace
	somchai.takeQuiz()

	api := labhttp.APIPath + "/dashboard" + labhttp.StudentPath
	page := labhttp.DashboardPath + labhttp.StudentPath
	for _, target := range []string{"student", "bob", "nobody"} {
		for _, who := range []user{somchai, bob} {
			resp, body := who.get(api + target)
			wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
			resp, body = who.inBrowser().do("GET", page+target, "", "", "Accept", "text/html")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "For instructors only") || strings.Contains(body, "data-student") || strings.Contains(body, "สมชาย") {
				t.Errorf("%s's browser on %s's drill-down: HTTP %d, want the friendly 403:\n%s", who.name, target, resp.StatusCode, body)
			}
		}
	}
	grader := user{t: t, lab: lab, token: "grader-token-0123456789"}
	resp, body := grader.get(api + "student")
	wantStatus(t, resp, body, http.StatusForbidden, "Forbidden")
	anon := user{t: t, lab: lab}
	resp, body = anon.get(api + "student")
	wantStatus(t, resp, body, http.StatusUnauthorized, "Unauthorized")
	// An anonymous browser is sent to sign in, as on every page but the
	// dashboard's own.
	if resp, body := anon.do("GET", page+"student", "", "", "Accept", "text/html"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin") || strings.Contains(body, "สมชาย") {
		t.Errorf("anonymous browser: HTTP %d to %q, want sent to sign in:\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}

	resp, body = teacher.get(api + "nobody")
	wantStatus(t, resp, body, http.StatusNotFound, "NotFound")
	resp, body = teacher.get(api + "student")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("instructor: HTTP %d: %s", resp.StatusCode, body)
	}
	var d labhttp.StudentDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Student.User != "student" || d.Student.DisplayName != "สมชาย ใจดี" || d.Student.Namespace != "student" || d.Student.Joined == nil {
		t.Errorf("student %+v", d.Student)
	}
	if len(d.Labs) != 1 || d.Labs[0].ID != "discovery" || d.Labs[0].Steps[0].State != labhttp.StatePassed || d.Labs[0].Steps[0].PassedAt == nil || d.Labs[0].Steps[0].Evidence == "" {
		t.Errorf("labs %+v", d.Labs)
	}
	if len(d.Attempts) != 1 || d.Attempts[0].Quiz != quiz.WatchQuizID || d.Attempts[0].ScoreMaximum != 5 || d.Attempts[0].Submitted.IsZero() || d.Attempts[0].Title == quiz.WatchQuizID {
		t.Errorf("attempts %+v", d.Attempts)
	}
	var sawForbidden, sawApis bool
	for i, r := range d.Requests {
		if i > 0 && r.Time.After(d.Requests[i-1].Time) {
			t.Errorf("requests are not newest first: %+v", d.Requests)
		}
		sawForbidden = sawForbidden || (r.Code == http.StatusForbidden && r.Namespace == "bob" && r.Resource == "pods")
		sawApis = sawApis || r.Path == "/apis"
	}
	if !sawForbidden || !sawApis {
		t.Errorf("requests lack the refused list in bob's namespace or GET /apis: %+v", d.Requests)
	}
	for _, r := range d.Requests {
		if r.Namespace == "bob" && r.Code != http.StatusForbidden {
			t.Errorf("a request of bob's shows as the student's: %+v", r)
		}
	}

	// The page, in Thai: the name as typed, the lab's Thai title, relative times.
	resp, body = teacher.do("GET", page+"student?lang=th", "", "", "Accept", "text/html")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the page: HTTP %d", resp.StatusCode)
	}
	// Everything happened a moment ago: "เมื่อสักครู่".
	for _, want := range []string{"สมชาย ใจดี", `data-student="student"`, "เมื่อสักครู่", "request ล่าสุด", "การทำแบบทดสอบ", "Discovery และ OpenAPI"} {
		if !strings.Contains(body, want) {
			t.Errorf("the Thai page lacks %q", want)
		}
	}
	if strings.Contains(body, "0001-01-01") {
		t.Errorf("the page shows a zero time")
	}
}

// "Stuck" reaches an open dashboard when the student becomes stuck, not
// on the next 30-second refresh.
func TestDashboardStuckArrivesLive(t *testing.T) {
	// Not parallel: it times when a student turns stuck.
	const stuckAfter = 2 * time.Second
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.StuckAfter = stuckAfter })
	alice := student(t, lab, "alice")
	ws := instructor(t, lab).dial(labhttp.APIPath + "/ws?dashboard=1&lang=th")
	// Taken before the start's request: the server counts from its own
	// stamp, made before it answers.
	started := time.Now()
	alice.start("watch")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for alice stuck: %v", err)
		}
		var m struct {
			T     string             `json:"t"`
			Class *labhttp.ClassView `json:"class"`
			HTML  string             `json:"html"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, r := range m.Class.Students {
			if r.User == "alice" && r.Stuck {
				if waited := time.Since(started); waited < stuckAfter-100*time.Millisecond {
					t.Errorf("stuck after %s, before %s without progress", waited, stuckAfter)
				}
				if !strings.Contains(m.HTML, "ติดอยู่") || !strings.Contains(m.HTML, `data-user="alice"`) {
					t.Errorf("the rows, in Thai, do not show alice stuck:\n%s", m.HTML)
				}
				return
			}
		}
	}
}

// A student who joins and a quiz submitted reach an open dashboard at
// once, from etcd, not on the next 30-second refresh: neither touches lab
// progress.
func TestDashboardJoinAndQuizArriveLive(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) { classroomMode(c); c.StuckAfter = time.Hour })
	ws := instructor(t, lab).dial(labhttp.APIPath + "/ws?dashboard=1")
	waitRow := func(what string, ok func(labhttp.StudentRow, string) bool) {
		t.Helper()
		// Within the 30-second refresh, counted from each change (a
		// join waits for its namespace's quota and RBAC first).
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			var m struct {
				Class *labhttp.ClassView `json:"class"`
				HTML  string             `json:"html"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, r := range m.Class.Students {
				if ok(r, m.HTML) {
					return
				}
			}
		}
	}
	st, token, err := lab.Class().Join(context.Background(), "สมชาย ใจดี", "", "")
	if err != nil {
		t.Fatal(err)
	}
	waitRow("her joining", func(r labhttp.StudentRow, html string) bool {
		return r.User == st.Name && r.DisplayName == "สมชาย ใจดี" && strings.Contains(html, "สมชาย ใจดี") && strings.Contains(html, "not started")
	})
	// A name in markup is shown as the text it is.
	if _, _, err := lab.Class().Join(context.Background(), `<img src=x onerror="alert(1)">`, "", ""); err != nil {
		t.Fatal(err)
	}
	waitRow("the markup name, escaped", func(r labhttp.StudentRow, html string) bool {
		if r.DisplayName != `<img src=x onerror="alert(1)">` {
			return false
		}
		if strings.Contains(html, "<img") || !strings.Contains(html, "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") {
			t.Fatalf("the rows draw the name as markup:\n%s", html)
		}
		return true
	})
	user{t: t, lab: lab, name: st.Name, token: token}.takeQuiz()
	submitted := time.Now()
	waitRow("her score", func(r labhttp.StudentRow, html string) bool {
		q, ok := r.Quizzes[quiz.WatchQuizID]
		return r.User == st.Name && ok && q.Attempts == 1 && q.ScoreMaximum == 5 && strings.Contains(html, `data-quiz="`+quiz.WatchQuizID+`"`)
	})
	t.Logf("the score reached the dashboard %s after the submission's answer", time.Since(submitted).Round(time.Millisecond))
}
