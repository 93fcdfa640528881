package classroom_test

// kubelab's own endpoints: reset, the labs, kubeconfig, traces, the web
// UI's websockets and compaction, attacked by students (with kubectl's
// --as) and by web pages of other sites.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server"
)

const (
	epJoinCode        = "endpoints-join-code"
	epInstructorToken = "endpoints-instructor-token-0123456789"
	epResetPath       = "/kubelab/v1/labs/reset"
)

// epClass is a kubelab in classroom mode with an instructor token.
func epClass(t *testing.T) *kubelabtest.Lab {
	t.Helper()
	return kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.JoinCode = epJoinCode
		c.ClassName = "k8s-101"
		c.SecureListen = "127.0.0.1:0"
		c.InstructorToken = epInstructorToken
	})
}

// epStudent is a student who joined: a browser with the session cookie,
// and the kubeconfig they downloaded for their own kubectl.
type epStudent struct {
	name       string
	browser    *http.Client
	kubeconfig string
}

func epJoin(t *testing.T, lab *kubelabtest.Lab, display string) *epStudent {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	s := &epStudent{browser: &http.Client{Jar: jar}}
	req, _ := http.NewRequest("POST", lab.URL()+"/signin", strings.NewReader(url.Values{"name": {display}, "code": {epJoinCode}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	code, body := epDo(t, s.browser, req)
	if code != http.StatusCreated {
		t.Fatalf("join as %s: %d %s", display, code, body)
	}
	var st struct{ Name string }
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	s.name = st.Name
	req, _ = http.NewRequest("GET", lab.URL()+"/kubelab/v1/kubeconfig", nil)
	code, kc := epDo(t, s.browser, req)
	if code != http.StatusOK {
		t.Fatalf("kubeconfig of %s: %d %s", s.name, code, kc)
	}
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func epDo(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// kubectl runs the real kubectl with the student's kubeconfig.
func (s *epStudent) kubectl(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
}

// postRaw POSTs an empty JSON object to path with the student's kubectl.
func (s *epStudent) postRaw(t *testing.T, path string, extra ...string) (string, string, error) {
	t.Helper()
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s.kubectl(t, append(extra, "create", "--raw", path, "-f", body)...)
}

// epState is what a reset would change in a namespace: its pods' UIDs
// and whether a marker ConfigMap is still there.
type epState struct {
	pods   []types.UID
	marker bool
}

func epMark(t *testing.T, lab *kubelabtest.Lab, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}, Data: map[string]string{"why": "a reset would delete it"}}
	if _, err := lab.Clientset(t).CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func epStateOf(t *testing.T, lab *kubelabtest.Lab, ns string) epState {
	t.Helper()
	ctx := context.Background()
	cs := lab.Clientset(t)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st epState
	for _, p := range pods.Items {
		st.pods = append(st.pods, p.UID)
	}
	slices.Sort(st.pods)
	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "marker", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	st.marker = err == nil
	return st
}

func (a epState) same(b epState) bool { return a.marker == b.marker && slices.Equal(a.pods, b.pods) }

// A student may impersonate their own service account (edit allows it),
// whom kubelab maps to the class's shared namespace. Reset through that
// identity wiped internals-demo for the whole class. kubelab's own
// endpoints now refuse impersonation, so the student acts only as
// themselves, and mints nothing for another identity.
func TestEndpointsRefuseImpersonation(t *testing.T) {
	lab := epClass(t)
	alice := epJoin(t, lab, "Alice")
	epMark(t, lab, "internals-demo")
	epMark(t, lab, alice.name)
	demo, own := epStateOf(t, lab, "internals-demo"), epStateOf(t, lab, alice.name)

	sa := "system:serviceaccount:" + alice.name + ":default"
	_, stderr, err := alice.postRaw(t, epResetPath, "--as", sa)
	if err == nil || !strings.Contains(stderr, "impersonation applies to the Kubernetes API only") {
		t.Errorf("reset as %s: %v %s", sa, err, stderr)
	}
	for _, path := range []string{"/kubelab/v1/kubeconfig", "/kubelab/v1/whoami", "/kubelab/v1/traces", "/kubelab/v1/labs"} {
		out, stderr, err := alice.kubectl(t, "--as", sa, "get", "--raw", path)
		if err == nil || !strings.Contains(stderr, "impersonation applies to the Kubernetes API only") {
			t.Errorf("GET %s as %s: %v\n%s%s", path, sa, err, out, stderr)
		}
	}
	if got := epStateOf(t, lab, "internals-demo"); !got.same(demo) {
		t.Errorf("internals-demo changed: %+v, was %+v", got, demo)
	}
	if got := epStateOf(t, lab, alice.name); !got.same(own) {
		t.Errorf("%s changed: %+v, was %+v", alice.name, got, own)
	}
	// The Kubernetes API still serves impersonation, as RBAC allows it.
	if _, stderr, err := alice.kubectl(t, "--as", sa, "auth", "whoami"); err != nil {
		t.Errorf("kubectl auth whoami as %s: %v %s", sa, err, stderr)
	}
}

// A reset is the student's own deletecollection requests: without RBAC
// in their namespace (the instructor removed their RoleBinding) it is
// kube's 403 and deletes nothing.
func TestEndpointsResetNeedsRBAC(t *testing.T) {
	lab := epClass(t)
	alice := epJoin(t, lab, "Alice")
	epMark(t, lab, alice.name)
	before := epStateOf(t, lab, alice.name)
	if err := lab.Clientset(t).RbacV1().RoleBindings(alice.name).Delete(context.Background(), "kubelab-student", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubelabtest.Eventually(t, "alice losing her access", func() (bool, error) {
		out, _, _ := alice.kubectl(t, "auth", "can-i", "deletecollection", "pods", "-n", alice.name)
		return strings.TrimSpace(out) == "no", nil
	})

	_, stderr, err := alice.postRaw(t, epResetPath)
	want := `pods is forbidden: User "` + alice.name + `" cannot deletecollection resource "pods" in API group "" in the namespace "` + alice.name + `"`
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("reset without RBAC: %v %s\nwant %s", err, stderr, want)
	}
	if got := epStateOf(t, lab, alice.name); !got.same(before) {
		t.Errorf("%s changed: %+v, was %+v", alice.name, got, before)
	}
}

// The student's own reset works, and its deletes are theirs: their
// traces list them, authorized by RBAC.
func TestEndpointsResetIsTheStudentsDeletes(t *testing.T) {
	lab := epClass(t)
	alice := epJoin(t, lab, "Alice")
	epMark(t, lab, alice.name)
	before := epStateOf(t, lab, alice.name)

	if out, stderr, err := alice.postRaw(t, epResetPath); err != nil {
		t.Fatalf("reset: %v\n%s%s", err, out, stderr)
	}
	after := epStateOf(t, lab, alice.name)
	if after.marker || len(after.pods) != len(before.pods) || slices.Equal(after.pods, before.pods) {
		t.Errorf("after reset: %+v, before %+v: want the marker gone and the lesson's pods made again", after, before)
	}
	out, stderr, err := alice.kubectl(t, "get", "--raw", "/kubelab/v1/traces")
	if err != nil {
		t.Fatalf("traces: %v %s", err, stderr)
	}
	var list struct {
		Traces []pipeline.Trace `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, tr := range list.Traces {
		if tr.Verb == "deletecollection" && tr.Namespace == alice.name && tr.Code == http.StatusOK && tr.User == alice.name && epAuthorized(tr) {
			deleted[tr.Resource] = true
		}
	}
	if !deleted["pods"] || !deleted["configmaps"] {
		t.Errorf("alice's traces show deletecollection of %v, want pods and configmaps among them:\n%s", deleted, out)
	}
}

// epAuthorized: the trace passed RBAC's authorization stage.
func epAuthorized(tr pipeline.Trace) bool {
	for _, r := range tr.Records {
		if r.Stage == pipeline.StageAuthorization && r.Decision == pipeline.Allow {
			return true
		}
	}
	return false
}

// A web page of another site, open in the same browser as a local
// kubelab (where a request with no credentials is cluster-admin), posts
// a form to the reset endpoint and sends no-cors fetches to it and to the
// quiz's attempts. All are refused by the cross-origin check every unsafe
// method passes: nothing is deleted, no attempt is stored.
func TestEndpointsCrossSitePagesCannotReset(t *testing.T) {
	lab := kubelabtest.Start(t)
	epMark(t, lab, "internals-demo")
	before := epStateOf(t, lab, "internals-demo")
	target := lab.URL() + epResetPath
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>cute cats</title>
<form id="f" method="POST" action=%q><input name="x" value="y"></form>
<script>
Promise.all([
  fetch(%q, {method: "POST", mode: "no-cors", body: "x"}),
  fetch(%q, {method: "POST", mode: "no-cors", body: %q}),
]).then(() => { document.title = "fetched"; }, () => { document.title = "fetch failed"; });
</script>`, target, target, lab.URL()+"/kubelab/v1/quizzes/spot-the-bug/attempts",
			`{"answers":[{"question":"wait-for-pod-ready","marks":[{"line":4,"reason":"etcd-direct"}]}]}`)
	}))
	defer attacker.Close()

	ctx := browsertest.Start(t)
	browsertest.Do(t, ctx, "open the other site's page", chromedp.Navigate(attacker.URL))
	browsertest.WaitJS(t, ctx, "the no-cors fetches answered", `document.title === "fetched"`)
	if got := epStateOf(t, lab, "internals-demo"); !got.same(before) {
		t.Errorf("after the no-cors fetch: internals-demo changed: %+v, was %+v", got, before)
	}
	// client-go sends no token over plain HTTP: read it from the file.
	kc, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", lab.URL()+"/kubelab/v1/grader/results", nil)
	req.Header.Set("Authorization", "Bearer "+kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token)
	if code, body := epDo(t, http.DefaultClient, req); code != http.StatusOK || strings.Contains(body, "spot-the-bug") {
		t.Errorf("quiz attempts after the no-cors fetch: %d %s", code, body)
	}
	// Submitted once this evaluation has returned: the page then goes.
	browsertest.Eval[bool](t, ctx, `setTimeout(() => document.getElementById("f").submit(), 0), true`)
	browsertest.WaitJS(t, ctx, "kubelab's answer to the form",
		`location.href.startsWith(`+strconv.Quote(lab.URL())+`) && document.body.innerText.includes("cross-origin request refused")`)
	if got := epStateOf(t, lab, "internals-demo"); !got.same(before) {
		t.Errorf("after the form: internals-demo changed: %+v, was %+v", got, before)
	}
	// kubectl sends no Origin, and still resets.
	if _, stderr, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", lab.KubeconfigPath(), "create", "--raw", epResetPath, "-f", epEmptyJSON(t)); err != nil {
		t.Errorf("kubectl reset: %v %s", err, stderr)
	}
}

func epEmptyJSON(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// In a class, anonymous users all share one name, so the tracer's
// websocket streamed each the others' request paths. Every live view's
// websocket now answers an anonymous user 401, and a signed-in student's
// browser on a page of another site 403 (the Origin check).
func TestEndpointsWebsocketsNeedSignInAndThisSite(t *testing.T) {
	lab := epClass(t)
	alice := epJoin(t, lab, "Alice")
	u, _ := url.Parse(lab.URL())
	cookies := alice.browser.Jar.Cookies(u)
	for _, path := range []string{"/ui/ws/trace", "/ui/ws/watch", "/ui/ws/run?cmd=get-pods", "/ui/ws/pollwatch", "/kubelab/v1/labs/ws?lab=watch"} {
		ws := "ws" + strings.TrimPrefix(lab.URL(), "http") + path
		if code, body := epDial(t, ws, http.Header{"Origin": {lab.URL()}}); code != http.StatusUnauthorized || !strings.Contains(body, `"reason":"Unauthorized"`) {
			t.Errorf("anonymous %s: %d %s, want a 401 Status", path, code, body)
		}
		h := http.Header{"Origin": {"http://cats.example"}}
		for _, ck := range cookies {
			h.Add("Cookie", ck.String())
		}
		if code, body := epDial(t, ws, h); code != http.StatusForbidden {
			t.Errorf("alice from another site %s: %d %s, want 403", path, code, body)
		}
		h.Set("Origin", lab.URL())
		if code, body := epDial(t, ws, h); code != http.StatusSwitchingProtocols {
			t.Errorf("alice on kubelab's page %s: %d %s, want the websocket", path, code, body)
		}
	}
}

// epDial opens a websocket and answers the handshake's status and body.
func epDial(t *testing.T, target string, h http.Header) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPHeader: h})
	if err == nil {
		conn.CloseNow()
		return http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// In a class every student's watches share one etcd: a student's
// "Compact now" made everyone's older watches fail with 410 Gone. Only
// instructors and admins compact now; a student gets 403 saying what to
// do instead, and their page offers the button disabled, with the reason.
func TestEndpointsOnlyInstructorsCompactAClass(t *testing.T) {
	lab := epClass(t)
	alice := epJoin(t, lab, "Alice")
	req, _ := http.NewRequest("POST", lab.URL()+"/ui/compact", nil)
	code, body := epDo(t, alice.browser, req)
	if code != http.StatusForbidden || !strings.Contains(body, `"kind":"Status"`) || !strings.Contains(body, "ask your instructor") {
		t.Errorf("alice compacts: %d %s, want a 403 Status saying to ask the instructor", code, body)
	}
	req, _ = http.NewRequest("GET", lab.URL()+"/lab", nil)
	req.Header.Set("Accept", "text/html")
	if code, page := epDo(t, alice.browser, req); code != http.StatusOK || !strings.Contains(page, "data-compact disabled") {
		t.Errorf("alice's lab page: %d, want Compact now disabled", code)
	}

	instructor := http.Header{"Authorization": {"Bearer " + epInstructorToken}}
	req, _ = http.NewRequest("POST", lab.URL()+"/ui/compact", nil)
	req.Header = instructor.Clone()
	if code, body := epDo(t, http.DefaultClient, req); code != http.StatusOK || !strings.Contains(body, `"revision"`) {
		t.Errorf("the instructor compacts: %d %s", code, body)
	}
	req, _ = http.NewRequest("GET", lab.URL()+"/lab", nil)
	req.Header = instructor.Clone()
	req.Header.Set("Accept", "text/html")
	if code, page := epDo(t, http.DefaultClient, req); code != http.StatusOK || !strings.Contains(page, "data-compact>") {
		t.Errorf("the instructor's lab page: %d, want Compact now offered", code)
	}
}

// /lang remembers the language and goes back to the page the reader was
// on: only ever a path of this site, whatever the Referer says.
func TestEndpointsLangRedirectsOnlyHere(t *testing.T) {
	lab := kubelabtest.Start(t)
	host := strings.TrimPrefix(lab.URL(), "http://")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for referer, want := range map[string]string{
		"http://" + host + "/lesson/watch":      "/lesson/watch",
		"http://" + host + `/\cats.example/x`:   "/",
		"http://" + host + "/%5Ccats.example/x": "/",
		"http://cats.example/lesson/watch":      "/lesson/",
		"http://" + host + "//cats.example/x":   "/",
	} {
		req, _ := http.NewRequest("GET", lab.URL()+"/lang?to=th", nil)
		req.Header.Set("Referer", referer)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || got != want {
			t.Errorf("Referer %s: %d to %q, want %q", referer, resp.StatusCode, got, want)
		}
	}
}

// Every JSON answer, kubelab's own and the API's, success or Status,
// carries X-Content-Type-Options: nosniff, as kube-apiserver's do, so no
// browser runs what a response echoes as a page or a script.
func TestEndpointsJSONIsNoSniff(t *testing.T) {
	lab := kubelabtest.Start(t)
	for _, r := range []struct{ method, path, auth, origin string }{
		{"GET", "/kubelab/v1/whoami", "", ""},
		{"GET", "/kubelab/v1/labs", "", ""},
		{"GET", "/kubelab/v1/labs/nope", "", ""},
		{"GET", "/kubelab/v1/traces", "", ""},
		{"GET", "/kubelab/v1/quizzes", "", ""},
		{"GET", "/api/v1/namespaces/internals-demo/pods", "", ""},
		{"GET", "/api/v1/namespaces/internals-demo/pods/nope", "", ""},
		{"GET", "/api", "Bearer nope", ""},
		{"POST", epResetPath, "", "http://cats.example"},
	} {
		req, _ := http.NewRequest(r.method, lab.URL()+r.path, nil)
		if r.auth != "" {
			req.Header.Set("Authorization", r.auth)
		}
		if r.origin != "" {
			req.Header.Set("Origin", r.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !strings.Contains(resp.Header.Get("Content-Type"), "json") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d %q, X-Content-Type-Options %q", r.method, r.path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"))
		}
	}
}
