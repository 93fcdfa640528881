package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// sessionCookie signs in through the form at base and returns the session
// cookie set.
func sessionCookie(t *testing.T, c *http.Client, base, name string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/signin", strings.NewReader(url.Values{"name": {name}, "code": {joinCode}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == authn.SessionCookie || ck.Name == authn.SecureSessionCookie {
			return ck
		}
	}
	t.Fatalf("sign in at %s: %d, no session cookie", base, resp.StatusCode)
	return nil
}

// Behind TLS the session cookie is a Secure __Host- cookie, so a browser
// never sends it in clear and no other host or plain-HTTP answer can set
// it; on plain HTTP (a laptop's localhost) it cannot be, or no browser
// would keep it. HttpOnly and SameSite always.
func TestWebSecuritySessionCookieSecureBehindTLS(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// The test looks at the cookie's attributes, not at the certificate.
	tlsClient := &http.Client{CheckRedirect: noRedirect, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	plain := &http.Client{CheckRedirect: noRedirect}

	secure := sessionCookie(t, tlsClient, lab.SecureURL(), "Tess")
	if secure.Name != authn.SecureSessionCookie || !secure.Secure || !secure.HttpOnly || secure.SameSite != http.SameSiteLaxMode || secure.Path != "/" || secure.Domain != "" {
		t.Errorf("over HTTPS: %+v", secure)
	}
	ck := sessionCookie(t, plain, lab.URL(), "Paul")
	if ck.Name != authn.SessionCookie || ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode {
		t.Errorf("over HTTP: %+v", ck)
	}

	req, _ := http.NewRequest("POST", lab.SecureURL()+"/signout", nil)
	req.AddCookie(secure)
	resp, err := tlsClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cleared := false
	for _, c := range resp.Cookies() {
		if c.Name == authn.SecureSessionCookie && c.Secure && c.HttpOnly && c.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("sign-out over HTTPS does not clear the __Host- cookie: %v", resp.Cookies())
	}
}

// A page on another site cannot sign a student out (nor in: see
// TestClassroomSignIn): the form posts are checked for their origin.
func TestWebSecurityCrossSiteSignOut(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	ck := sessionCookie(t, &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, lab.URL(), "Sam")
	req, _ := http.NewRequest("POST", lab.URL()+"/signout", nil)
	req.AddCookie(ck)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Refused either way: the cookie is not taken from a cross-site
	// request (401), or the origin check refuses it (403).
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("cross-site sign-out: %d", resp.StatusCode)
	}
	// The session still works.
	req, _ = http.NewRequest("POST", lab.URL()+server.KubeconfigPath, nil)
	req.AddCookie(ck)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after a refused cross-site sign-out, the session gets %d", resp.StatusCode)
	}
}

// Every websocket of the web UI and the labs refuses a page from another origin, in
// classroom mode with a valid session cookie too (the browser would send
// it along: that is what the Origin check is for).
func TestWebSecurityWebsocketOrigin(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	ck := sessionCookie(t, &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, lab.URL(), "Wes")
	for _, path := range []string{"/ui/ws/trace", "/ui/ws/watch?lane=A", "/ui/ws/run?cmd=get-pods", "/ui/ws/pollwatch", labhttp.APIPath + "/ws?lab=watch"} {
		for origin, want := range map[string]int{"http://evil.example": http.StatusForbidden, lab.URL(): http.StatusSwitchingProtocols} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			h := http.Header{"Origin": {origin}, "Cookie": {ck.Name + "=" + ck.Value}}
			c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(lab.URL(), "http")+path, &websocket.DialOptions{HTTPHeader: h})
			cancel()
			if c != nil {
				c.CloseNow()
			}
			if resp == nil || resp.StatusCode != want {
				t.Errorf("%s from %s: %v %v, want %d", path, origin, resp, err, want)
			}
		}
	}
}

// No token reaches the logs, at debug level, or etcd, where only hashes
// are kept: a session cookie, a student's kubeconfig token, the grader's,
// and a wrong one, each used on the API, the web UI and the grader.
func TestWebSecurityTokensNeverLoggedNorStored(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	const graderToken = "grader-token-0123456789"
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.JoinCode = joinCode
		c.ClassName = "k8s-101"
		c.SecureListen = "127.0.0.1:0"
		c.GraderToken = graderToken
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	s := join(t, lab, "Tina")
	kc, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var kubeToken string
	for _, u := range kc.AuthInfos {
		kubeToken = u.Token
	}
	u, _ := url.Parse(lab.URL())
	var session string
	for _, ck := range s.browser.Jar.Cookies(u) {
		if ck.Name == authn.SessionCookie {
			session = ck.Value
		}
	}
	const wrong = "wrong-token-abcdefghijklmnop"
	if kubeToken == "" || session == "" {
		t.Fatalf("kubeconfig token %q, session %q", kubeToken, session)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.clientset(t).CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("a student listed the default namespace's pods")
	}
	for _, tok := range []string{kubeToken, session, graderToken, wrong} {
		for _, path := range []string{"/api/v1/namespaces/default/pods", "/api/v1/namespaces/kube-system/secrets", quizhttp.GraderPath + "/results", "/lesson/"} {
			req, _ := http.NewRequest("GET", lab.URL()+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	req, _ := http.NewRequest("POST", lab.URL()+"/signout", nil)
	req.AddCookie(&http.Cookie{Name: authn.SessionCookie, Value: session})
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	out := logs.String()
	t.Logf("%d bytes of logs, %d lines", len(out), strings.Count(out, "\n"))
	if !strings.Contains(out, "level=DEBUG") && !strings.Contains(out, "level=INFO") {
		t.Fatalf("nothing was logged; the check would prove nothing:\n%s", out)
	}
	// kubelab's own client: a class's etcd port wants a client certificate.
	all, err := lab.EtcdClient().Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"kubeconfig token": kubeToken, "session": session, "grader token": graderToken, "wrong token": wrong} {
		if strings.Contains(out, tok) {
			t.Errorf("the %s is in the logs", name)
		}
		for _, kv := range all.Kvs {
			if bytes.Contains(kv.Key, []byte(tok)) || bytes.Contains(kv.Value, []byte(tok)) {
				t.Errorf("the %s is stored in etcd under %s", name, kv.Key)
			}
		}
	}
}

// Who submits a quiz is the session's user, whatever the body says: the
// API and the form both refuse a body naming a student or a class, and
// what is recorded is the session's student.
func TestWebSecurityIdentityNeverFromTheBody(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	ida := join(t, lab, "Ida")
	join(t, lab, "Bob")
	post := func(path, contentType, body string) *http.Response {
		req, _ := http.NewRequest("POST", lab.URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Origin", lab.URL())
		resp, err := ida.browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", "application/json", `{"student":"bob","user":"bob","answers":[]}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an API submission naming another student: %d, want 400", resp.StatusCode)
	}
	if resp := post("/quiz/"+quiz.WatchQuizID, "application/x-www-form-urlencoded", url.Values{"student": {"bob"}, "user": {"bob"}, "class": {"other"}}.Encode()); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a form submission naming another student: %d, want 400", resp.StatusCode)
	}
	view, err := ida.browser.Get(lab.URL() + quizhttp.QuizzesPath + "/" + quiz.WatchQuizID)
	if err != nil {
		t.Fatal(err)
	}
	var v quiz.View
	json.NewDecoder(view.Body).Decode(&v)
	view.Body.Close()
	if resp := post(quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", "application/json", `{"attempt":"`+v.Attempt+`","answers":[]}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a plain submission: %d", resp.StatusCode)
	}

	req, _ := http.NewRequest("GET", lab.URL()+quizhttp.GraderPath+"/results", nil)
	req.Header.Set("Authorization", "Bearer grader-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var results struct {
		Items []struct{ Student, Class string } `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&results); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("grader results: %d %v", resp.StatusCode, err)
	}
	if len(results.Items) != 1 || results.Items[0].Student != ida.name || results.Items[0].Class != "k8s-101" {
		t.Fatalf("the attempts recorded are %+v, want one by %s in k8s-101", results.Items, ida.name)
	}
}
