package classroom_test

// kubelab's own endpoints, attacked from web pages and browsers: another
// site's page, websockets, Compact now, /lang and how JSON is served.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/internal/webclient"
)

// A web page of another site, open in the same browser as a local
// kubelab (where a request with no credentials is cluster-admin), posts
// a form to the reset endpoint and sends no-cors fetches to it and to the
// quiz's attempts. All are refused by the cross-origin check every unsafe
// method passes: nothing is deleted, no attempt is stored.
func TestEndpointsCrossSitePagesCannotReset(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	admin := lab.Clientset(t)
	epMark(t, admin, "internals-demo")
	before := epStateOf(t, admin, "internals-demo")
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
	if got := epStateOf(t, admin, "internals-demo"); !got.same(before) {
		t.Errorf("after the no-cors fetch: internals-demo changed: %+v, was %+v", got, before)
	}
	// client-go sends no token over plain HTTP: read it from the file.
	kc, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	token := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token
	if resp, body := webclient.Send(t, http.DefaultClient, "GET", lab.URL()+"/kubelab/v1/grader/results", "", "Authorization", "Bearer "+token); resp.StatusCode != http.StatusOK || strings.Contains(body, "spot-the-bug") {
		t.Errorf("quiz attempts after the no-cors fetch: %d %s", resp.StatusCode, body)
	}
	// Submitted once this evaluation has returned: the page then goes.
	browsertest.Eval[bool](t, ctx, `setTimeout(() => document.getElementById("f").submit(), 0), true`)
	browsertest.WaitJS(t, ctx, "kubelab's answer to the form",
		`location.href.startsWith(`+strconv.Quote(lab.URL())+`) && document.body.innerText.includes("cross-origin request refused")`)
	if got := epStateOf(t, admin, "internals-demo"); !got.same(before) {
		t.Errorf("after the form: internals-demo changed: %+v, was %+v", got, before)
	}
	// kubectl sends no Origin, and still resets.
	if _, stderr, err := clitest.KubectlWith(t, lab.KubeconfigPath(), "create", "--raw", epResetPath, "-f", epEmptyJSON(t)); err != nil {
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
	t.Parallel()
	c := epClass(t)
	alice := join(t, c.URL(), "Alice")
	for _, path := range []string{"/ui/ws/trace", "/ui/ws/watch", "/ui/ws/run?cmd=get-pods", "/ui/ws/pollwatch", "/kubelab/v1/labs/ws?lab=watch"} {
		ws := "ws" + strings.TrimPrefix(c.URL(), "http") + path
		if code, body := epDial(t, ws, http.Header{"Origin": {c.URL()}}); code != http.StatusUnauthorized || !strings.Contains(body, `"reason":"Unauthorized"`) {
			t.Errorf("anonymous %s: %d %s, want a 401 Status", path, code, body)
		}
		h := http.Header{"Origin": {"http://cats.example"}, "Cookie": {alice.cookie()}}
		if code, body := epDial(t, ws, h); code != http.StatusForbidden {
			t.Errorf("alice from another site %s: %d %s, want 403", path, code, body)
		}
		h.Set("Origin", c.URL())
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
	t.Parallel()
	c := epClass(t)
	alice := join(t, c.URL(), "Alice")
	resp, body := alice.do(t, "POST", "/ui/compact", "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"kind":"Status"`) || !strings.Contains(body, "ask your instructor") {
		t.Errorf("alice compacts: %d %s, want a 403 Status saying to ask the instructor", resp.StatusCode, body)
	}
	if resp, page := alice.do(t, "GET", "/lab", "", "Accept", "text/html"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "data-compact disabled") {
		t.Errorf("alice's lab page: %d, want Compact now disabled", resp.StatusCode)
	}

	instructor := "Bearer " + epInstructorToken
	if resp, body := webclient.Send(t, http.DefaultClient, "POST", c.URL()+"/ui/compact", "", "Authorization", instructor); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"revision"`) {
		t.Errorf("the instructor compacts: %d %s", resp.StatusCode, body)
	}
	if resp, page := webclient.Send(t, http.DefaultClient, "GET", c.URL()+"/lab", "", "Authorization", instructor, "Accept", "text/html"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "data-compact>") {
		t.Errorf("the instructor's lab page: %d, want Compact now offered", resp.StatusCode)
	}
}

// /lang remembers the language and goes back to the page the reader was
// on: only ever a path of this site, whatever the Referer says.
func TestEndpointsLangRedirectsOnlyHere(t *testing.T) {
	t.Parallel()
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
// carries X-Content-Type-Options: nosniff (kube-apiserver sets it on its errors), so no
// browser runs what a response echoes as a page or a script.
func TestEndpointsJSONIsNoSniff(t *testing.T) {
	t.Parallel()
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
