package labhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

const instructorToken = "instructor-token-0123456789"

// classroom starts kubelab in classroom mode, with an instructor token.
func classroomMode(c *server.Config) {
	c.Classroom = true
	c.SecureListen = "127.0.0.1:0"
	c.InstructorToken = instructorToken
}

// user is a client of a lab acting as one user: a bearer token for API
// clients and kubectl, or the same token as a browser's session cookie.
type user struct {
	t       *testing.T
	lab     *kubelabtest.Lab
	name    string
	token   string
	browser bool
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// student signs name up as a student of the class, namespace and
// RoleBinding included, as joining from the sign-in page does.
func student(t *testing.T, lab *kubelabtest.Lab, name string) user {
	t.Helper()
	ctx := context.Background()
	st, token, err := lab.Class().Join(ctx, name, "", "")
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	return user{t: t, lab: lab, name: st.Name, token: token}
}

func mint(t *testing.T, lab *kubelabtest.Lab, name string, groups ...string) user {
	t.Helper()
	token, err := lab.Authenticator().Mint(context.Background(), pipeline.User{Name: name, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return user{t: t, lab: lab, name: name, token: token}
}

func instructor(t *testing.T, lab *kubelabtest.Lab) user {
	return user{t: t, lab: lab, name: "kubelab-instructor", token: instructorToken}
}

// inBrowser is the same user as their browser is: the token in the
// session cookie, requests sent from kubelab's own pages.
func (u user) inBrowser() user { u.browser = true; return u }

func (u user) do(method, path, contentType, body string, header ...string) (*http.Response, string) {
	u.t.Helper()
	req, err := http.NewRequest(method, u.lab.URL()+path, strings.NewReader(body))
	if err != nil {
		u.t.Fatal(err)
	}
	u.auth(req.Header)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (u user) auth(h http.Header) {
	switch {
	case u.token == "":
	case u.browser:
		h.Set("Cookie", authn.SessionCookie+"="+u.token)
		h.Set("Origin", u.lab.URL())
		h.Set("Sec-Fetch-Site", "same-origin")
	default:
		h.Set("Authorization", "Bearer "+u.token)
	}
}

func (u user) get(path string) (*http.Response, string) { return u.do("GET", path, "", "") }

func (u user) post(path, body string) (*http.Response, string) {
	return u.do("POST", path, "application/json", body)
}

// view reads a lab as the user sees it.
func (u user) view(labID string) labhttp.LabView {
	u.t.Helper()
	resp, body := u.get(labhttp.APIPath + "/" + labID)
	if resp.StatusCode != http.StatusOK {
		u.t.Fatalf("GET lab %s: HTTP %d: %s", labID, resp.StatusCode, body)
	}
	var v labhttp.LabView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		u.t.Fatal(err)
	}
	return v
}

func (u user) start(labID string) labhttp.LabView {
	u.t.Helper()
	resp, body := u.post(labhttp.APIPath+"/"+labID+"/start", "")
	if resp.StatusCode != http.StatusOK {
		u.t.Fatalf("start %s: HTTP %d: %s", labID, resp.StatusCode, body)
	}
	var v labhttp.LabView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		u.t.Fatal(err)
	}
	return v
}

// state is a step's state as the user's view has it.
func (u user) state(labID, step string) string {
	for _, s := range u.view(labID).Steps {
		if s.ID == step {
			return s.State
		}
	}
	u.t.Fatalf("lab %s has no step %s", labID, step)
	return ""
}

// waitPassed waits for the server's checks to pass a step by themselves.
func (u user) waitPassed(labID, step string) labhttp.StepView {
	u.t.Helper()
	var last labhttp.StepView
	eventually.Holds(u.t, u.name+" passing "+labID+"/"+step, func() (bool, error) {
		for _, s := range u.view(labID).Steps {
			if s.ID == step {
				last = s
			}
		}
		return last.State == labhttp.StatePassed, nil
	})
	return last
}

// kubeconfigs are the kubeconfigs downloaded, by session token: a sign-in
// may hold only a few, so each user downloads one and keeps it.
var kubeconfigs sync.Map

// kubectlArgs runs the real kubectl as the user's own terminal does: with
// the kubeconfig their browser downloads from kubelab (HTTPS, their CA, a
// token of their own; kubectl sends tokens only over TLS).
func (u user) kubectlArgs(args ...string) []string {
	u.t.Helper()
	if cfg, ok := kubeconfigs.Load(u.token); ok {
		return append([]string{"--kubeconfig", cfg.(string)}, args...)
	}
	resp, body := u.inBrowser().do("POST", "/kubelab/v1/kubeconfig", "", "")
	if resp.StatusCode != http.StatusOK {
		u.t.Fatalf("kubeconfig: HTTP %d: %s", resp.StatusCode, body)
	}
	dir, err := os.MkdirTemp("", "kubelab-kubeconfig-")
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { os.RemoveAll(dir); kubeconfigs.Delete(u.token) })
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		u.t.Fatal(err)
	}
	kubeconfigs.Store(u.token, cfg)
	return append([]string{"--kubeconfig", cfg}, args...)
}

func (u user) kubectl(args ...string) (string, string, error) {
	u.t.Helper()
	return clitest.Run(u.t, clitest.Kubectl(u.t), u.kubectlArgs(args...)...)
}

// kubectlBackground starts kubectl (a watch) and stops it when the test ends.
func (u user) kubectlBackground(args ...string) {
	u.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, clitest.Kubectl(u.t), u.kubectlArgs(args...)...)
	if err := cmd.Start(); err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { cancel(); cmd.Wait() })
}

// dial opens a websocket of kubelab as the user's browser does.
func (u user) dial(path string) *websocket.Conn {
	u.t.Helper()
	h := http.Header{}
	u.auth(h)
	h.Del("Sec-Fetch-Site")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(u.lab.URL(), "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		u.t.Fatalf("websocket %s: HTTP %d: %v", path, code, err)
	}
	u.t.Cleanup(func() { conn.CloseNow() })
	return conn
}

var _ = classroom.StudentGroup

// wantStatus checks that body is a Kubernetes Status with code and reason.
func wantStatus(t *testing.T, resp *http.Response, body string, code int, reason string) {
	t.Helper()
	var st struct {
		Kind, Status, Reason, Message string
		Code                          int
	}
	if resp.StatusCode != code {
		t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, code, body)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" || st.Code != code || (reason != "" && st.Reason != reason) || st.Message == "" {
		t.Fatalf("not a Status %d %s: %s (%v)", code, reason, body, err)
	}
}

// pushWindow presses the timeline's "push the window past B" for u, past
// rv. Asked a moment before the watch cache's clock agrees that the change
// B missed is a freshness old, the push says how long to wait (409), as it
// tells the page; the test waits and asks again, as the page's student
// would.
func (u user) pushWindow(rv int64) (*http.Response, string) {
	body := `{"past":` + strconv.FormatInt(rv, 10) + `}`
	resp, answer := u.post("/ui/window/push", body)
	for deadline := time.Now().Add(30 * time.Second); resp.StatusCode == http.StatusConflict && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		resp, answer = u.post("/ui/window/push", body)
	}
	return resp, answer
}
