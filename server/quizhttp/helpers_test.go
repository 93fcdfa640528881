package quizhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/quiz/etcdstore"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// as is an HTTP client of a lab acting as one user (no token: anonymous).
type as struct {
	t     *testing.T
	lab   served
	token string
}

func mint(t *testing.T, lab served, name string, groups ...string) as {
	t.Helper()
	token, err := lab.Authenticator().Mint(context.Background(), pipeline.User{Name: name, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return as{t: t, lab: lab, token: token}
}

func student(t *testing.T, lab served, name, class string) as {
	return mint(t, lab, name, classroom.StudentGroup, "kubelab:class:"+class)
}

// ownClass names a class after the running test. On a shared server a
// test's students are of a class of their own and their names begin with
// it (see classmate), so that no test sees another's attempts, and no
// student's pace of submissions is spent by another test.
func ownClass(t *testing.T) string {
	return strings.ToLower(path.Base(t.Name()))
}

// classmate mints a student of class, whose user name is the class's, a
// dash, and name.
func classmate(t *testing.T, lab served, class, name string) as {
	return student(t, lab, class+"-"+name, class)
}

func grader(t *testing.T, lab served) as {
	return mint(t, lab, "lms-bridge", classroom.GraderGroup)
}

// noRedirects lets a test see a 303 itself.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (a as) do(method, path, contentType string, body io.Reader, header ...string) (*http.Response, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.lab.URL()+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp, string(b)
}

func (a as) get(path string) (*http.Response, string) { return a.do("GET", path, "", nil) }

func (a as) postJSON(path string, v any) (*http.Response, string) {
	a.t.Helper()
	var body string
	if s, ok := v.(string); ok {
		body = s
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			a.t.Fatal(err)
		}
		body = string(b)
	}
	return a.do("POST", path, "application/json", strings.NewReader(body))
}

func (a as) postForm(path string, form url.Values, header ...string) (*http.Response, string) {
	return a.do("POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), header...)
}

// status decodes a Kubernetes Status and checks its code and reason.
func wantStatus(t *testing.T, resp *http.Response, body string, code int, reason string) {
	t.Helper()
	var st struct {
		Kind, Status, Reason, Message string
		Code                          int
	}
	if resp.StatusCode != code {
		t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, code, body)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" || st.Code != code || st.Status != "Failure" || (reason != "" && st.Reason != reason) || st.Message == "" {
		t.Fatalf("not a Status %d %s: %s (%v)", code, reason, body, err)
	}
}

// storedAttempts counts the keys under the attempts' prefix in etcd,
// open attempts included.
func storedAttempts(t *testing.T, lab served) int64 {
	t.Helper()
	resp, err := lab.EtcdClient().Get(context.Background(), etcdstore.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// submittedAttempts counts the attempts submitted that f matches, as the
// grader sees them: on a shared server, those of the test's own class.
func submittedAttempts(t *testing.T, lab served, f quiz.Filter) int {
	t.Helper()
	got, err := etcdstore.New(lab.EtcdClient()).List(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

// revealing is a lab whose quizzes explain every attempt when submitted,
// with no limit on attempts, for tests of what the explanations show.
func revealing(c *server.Config) {
	c.QuizReveal, c.QuizAttempts = string(quiz.RevealAfterSubmit), 0
}

var attemptField = regexp.MustCompile(`name="attempt" value="([0-9a-f]+)"`)

// formOf reads a rendered quiz form: its attempt id, and every choice
// and reason offered, in the order shown.
func formOf(t *testing.T, page string) (attempt string, options map[string][]string) {
	t.Helper()
	m := attemptField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no attempt id in the page:\n%s", page)
	}
	options = map[string][]string{}
	for _, o := range regexp.MustCompile(`name="q:([^"]+)" value="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		options[o[1]] = append(options[o[1]], o[2])
	}
	return m[1], options
}

// view GETs a quiz as a student's client does, and so is issued an attempt.
func (a as) view(quizID string) quiz.View {
	a.t.Helper()
	resp, body := a.get(quizhttp.QuizzesPath + "/" + quizID)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("GET quiz %s: HTTP %d: %s", quizID, resp.StatusCode, body)
	}
	var v quiz.View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		a.t.Fatal(err)
	}
	return v
}

// idsOf maps the bank's option ids to the ids view v shows, found by
// their text as a student finds them; an id the bank does not have stays
// as it is.
func idsOf(v quiz.View) func(question, option string) string {
	q, _ := quiz.Lesson().Quiz(v.Quiz)
	return func(question, option string) string {
		qu, ok := q.Question(question)
		if !ok {
			return option
		}
		o, ok := qu.Option(option)
		for _, qv := range v.Questions {
			for _, ov := range qv.Options {
				if ok && qv.ID == question && ov.Text == o.Text.In(v.Lang) {
					return ov.ID
				}
			}
		}
		return option
	}
}

// inView rewrites answers given in the bank's option ids into the ids v
// shows.
func inView(t *testing.T, v quiz.View, answers []quiz.Answer) []quiz.Answer {
	t.Helper()
	idOf := idsOf(v)
	out := make([]quiz.Answer, len(answers))
	for i, ans := range answers {
		out[i] = quiz.Answer{Question: ans.Question}
		if ans.Choice != "" {
			out[i].Choice = idOf(ans.Question, ans.Choice)
		}
		for _, m := range ans.Marks {
			out[i].Marks = append(out[i].Marks, quiz.Mark{Line: m.Line, Reason: idOf(ans.Question, m.Reason)})
		}
	}
	return out
}

// take opens a quiz and submits answers (in the bank's ids) to the
// attempt it was issued, through the JSON API.
func (a as) take(quizID string, answers []quiz.Answer) (*http.Response, string) {
	a.t.Helper()
	v := a.view(quizID)
	return a.postJSON(quizhttp.QuizzesPath+"/"+quizID+"/attempts", quizhttp.AttemptRequest{Attempt: v.Attempt, Answers: inView(a.t, v, answers)})
}
