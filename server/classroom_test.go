package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/frontdoor"
)

const joinCode = "k8s-101"

func classroomLab(t *testing.T, options ...func(*server.Config)) *kubelabtest.Lab {
	return kubelabtest.Start(t, append([]func(*server.Config){func(c *server.Config) {
		c.Classroom = true
		c.JoinCode = joinCode
		c.ClassName = "k8s-101"
		c.SecureListen = "127.0.0.1:0"
		c.GraderToken = "grader-token-0123456789"
	}}, options...)...)
}

// student is a browser that joined the class: its cookie jar holds the session.
type student struct {
	name       string
	browser    *http.Client
	kubeconfig string
}

func join(t *testing.T, lab *kubelabtest.Lab, display string) *student {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", lab.URL()+"/signin", strings.NewReader(url.Values{"name": {display}, "code": {joinCode}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("join as %s: %d %s", display, resp.StatusCode, body)
	}
	var st struct{ Name string }
	json.Unmarshal(body, &st)
	s := &student{name: st.Name, browser: b}

	resp, err = b.Post(lab.URL()+server.KubeconfigPath, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("kubeconfig download: %d %s", resp.StatusCode, kc)
	}
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *student) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
}

func TestClassroomStudentsAreConfinedToTheirNamespace(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	alice, bob := join(t, lab, "Alice"), join(t, lab, "Bob")
	if alice.name != "alice" || bob.name != "bob" {
		t.Fatalf("names %q %q", alice.name, bob.name)
	}
	ctx := context.Background()
	a := alice.clientset(t)

	resp, err := alice.browser.Get(lab.URL() + "/kubelab/v1/whoami")
	if err != nil {
		t.Fatal(err)
	}
	var who server.Whoami
	json.NewDecoder(resp.Body).Decode(&who)
	resp.Body.Close()
	if who.User.Name != "alice" || who.Namespace != "alice" || !who.Student || !who.Classroom || who.DisplayName != "Alice" ||
		!slices.Contains(who.User.Groups, "kubelab:class:k8s-101") || !strings.HasPrefix(who.KubectlServer, "https://127.0.0.1:") {
		t.Fatalf("whoami: %+v", who)
	}

	// Her own namespace has the lesson's pods, and her kubeconfig's token
	// and namespace reach them over HTTPS.
	pods, err := a.CoreV1().Pods("alice").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 6 {
		t.Fatalf("alice's pods: %v (%d)", err, len(pods.Items))
	}
	if _, err := a.CoreV1().ConfigMaps("alice").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating in her namespace: %v", err)
	}

	// Bob's namespace: every verb refused with kube's message, nothing
	// written. The controllers first finish filling the new namespaces
	// (service account, root CA), so that only alice's requests could move
	// the revision.
	lab.WaitForControllers(t)
	before, _ := lab.EtcdClient().Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	for name, call := range map[string]func() error{
		"get":    func() error { _, err := a.CoreV1().Pods("bob").Get(ctx, "ssa-demo", metav1.GetOptions{}); return err },
		"list":   func() error { _, err := a.CoreV1().Pods("bob").List(ctx, metav1.ListOptions{}); return err },
		"watch":  func() error { _, err := a.CoreV1().Pods("bob").Watch(ctx, metav1.ListOptions{}); return err },
		"delete": func() error { return a.CoreV1().Pods("bob").Delete(ctx, "ssa-demo", metav1.DeleteOptions{}) },
		"create": func() error {
			_, err := a.CoreV1().ConfigMaps("bob").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{})
			return err
		},
		"list all namespaces": func() error { _, err := a.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); return err },
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("alice %s in bob's namespace: %v, want 403", name, err)
		}
	}
	after, _ := lab.EtcdClient().Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if after.Header.Revision != before.Header.Revision {
		t.Fatalf("refused requests moved etcd from revision %d to %d, writing %q", before.Header.Revision, after.Header.Revision, lab.KeysWrittenSince(t, before.Header.Revision))
	}

	// The real kubectl with her downloaded kubeconfig.
	kubectl := clitest.Kubectl(t)
	out, stderr, err := clitest.Run(t, kubectl, "--kubeconfig", alice.kubeconfig, "get", "pods", "-o", "name")
	if err != nil || !strings.Contains(out, "pod/ssa-demo") {
		t.Fatalf("kubectl get pods as alice: %v\n%s%s", err, out, stderr)
	}
	_, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", alice.kubeconfig, "get", "pods", "-n", "bob")
	want := `Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "bob"`
	if err == nil || !strings.Contains(stderr, want) {
		t.Fatalf("kubectl get pods -n bob as alice: %v\n%s", err, stderr)
	}

	// Her traces name the stage and the reason of the refusal.
	resp, err = alice.browser.Get(lab.URL() + "/kubelab/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	var traces struct {
		User   string
		Traces []struct {
			Verb, Namespace string
			Code            int
			Records         []struct{ Stage, Decision, Reason string }
		}
	}
	json.NewDecoder(resp.Body).Decode(&traces)
	resp.Body.Close()
	found := false
	for _, tr := range traces.Traces {
		if tr.Namespace == "bob" && tr.Code == 403 {
			last := tr.Records[len(tr.Records)-1]
			if last.Stage != "authorization" || last.Decision != "deny" {
				t.Errorf("a refused request's last stage: %+v", last)
			}
			found = true
		}
	}
	if traces.User != "alice" || !found {
		t.Fatalf("alice's traces do not show her refused requests: %+v", traces)
	}
	// Nobody lists another's traces but instructors, graders and admins.
	resp, _ = alice.browser.Get(lab.URL() + "/kubelab/v1/traces?user=bob")
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("alice listing bob's traces: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", lab.URL()+"/kubelab/v1/traces?user=alice&limit=5", nil)
	req.Header.Set("Authorization", "Bearer grader-token-0123456789")
	resp, _ = http.DefaultClient.Do(req)
	json.NewDecoder(resp.Body).Decode(&traces)
	resp.Body.Close()
	if resp.StatusCode != 200 || traces.User != "alice" || len(traces.Traces) != 5 {
		t.Fatalf("the grader listing alice's traces: %d %s %d", resp.StatusCode, traces.User, len(traces.Traces))
	}
}

// TestClassroomCanIAgreesWithEnforcement asks SelfSubjectAccessReview and
// then tries the request: the answers must match, as kubectl auth can-i's
// do on a real cluster.
func TestClassroomCanIAgreesWithEnforcement(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	alice := join(t, lab, "Alice")
	join(t, lab, "Bob")
	a := alice.clientset(t)
	ctx := context.Background()
	for _, tc := range []struct {
		verb, resource, ns string
		allowed            bool
		try                func() error
	}{
		{"list", "pods", "alice", true, func() error { _, err := a.CoreV1().Pods("alice").List(ctx, metav1.ListOptions{}); return err }},
		{"create", "configmaps", "alice", true, func() error {
			_, err := a.CoreV1().ConfigMaps("alice").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-"}}, metav1.CreateOptions{})
			return err
		}},
		{"delete", "pods", "alice", true, func() error {
			return a.CoreV1().Pods("alice").Delete(ctx, "web-86d8686cfb-84dk9", metav1.DeleteOptions{})
		}},
		{"list", "pods", "bob", false, func() error { _, err := a.CoreV1().Pods("bob").List(ctx, metav1.ListOptions{}); return err }},
		{"list", "rolebindings", "alice", false, func() error {
			_, err := a.RbacV1().RoleBindings("alice").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"list", "namespaces", "", false, func() error { _, err := a.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); return err }},
		{"delete", "namespaces", "", false, func() error { return a.CoreV1().Namespaces().Delete(ctx, "bob", metav1.DeleteOptions{}) }},
	} {
		t.Run(fmt.Sprintf("%s %s -n %q", tc.verb, tc.resource, tc.ns), func(t *testing.T) {
			group := ""
			if tc.resource == "rolebindings" {
				group = "rbac.authorization.k8s.io"
			}
			review, err := a.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tc.verb, Group: group, Resource: tc.resource, Namespace: tc.ns}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.try()
			if review.Status.Allowed != tc.allowed || (err == nil) != tc.allowed || (!tc.allowed && !apierrors.IsForbidden(err)) {
				t.Fatalf("can-i says %v, the request got %v; want allowed=%v", review.Status.Allowed, err, tc.allowed)
			}
		})
	}
}

// TestClassroomSignInPastMaxStudents: a join code is shared, so a
// stranger who learnt it, or a student's throwaway accounts, got a new
// namespace and quota at each sign-in without end (128 of them hold 2 GiB
// of quota). Past --max-students the sign-in is refused, in the page's
// language, and nothing is made.
func TestClassroomSignInPastMaxStudents(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t, func(c *server.Config) { c.MaxStudents = 2 })
	signin := func(name string, header ...string) (int, string) {
		req, _ := http.NewRequest("POST", lab.URL()+"/signin?lang=th", strings.NewReader(url.Values{"name": {name}, "code": {joinCode}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, name := range []string{"Ann", "Ben"} {
		if code, body := signin(name); code != http.StatusSeeOther {
			t.Fatalf("%s's sign-in: %d %s", name, code, body)
		}
	}
	if code, body := signin("Zz helper", "Accept", "application/json"); code != http.StatusForbidden || !strings.Contains(body, "the class is full") || !strings.Contains(body, "2 students have joined") {
		t.Errorf("a third sign-in by script: %d %s", code, body)
	}
	if code, body := signin("Zz helper"); code != http.StatusForbidden || !strings.Contains(body, "ชั้นเรียนเต็มแล้ว") {
		t.Errorf("a third sign-in in a Thai browser: %d %s", code, body)
	}
	if _, err := lab.Clientset(t).CoreV1().Namespaces().Get(context.Background(), "zz-helper", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused student's namespace: %v, want none", err)
	}
}

func TestClassroomSignIn(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(form url.Values, header ...string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", lab.URL()+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	t.Run("OKAnonymousBrowserIsSentToJoin", func(t *testing.T) {
		req, _ := http.NewRequest("GET", lab.URL()+"/lesson?x=1", nil)
		req.Header.Set("Accept", "text/html")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin?next=%2Flesson%3Fx%3D1" {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("OKFormJoinSetsAnHttpOnlyCookie", func(t *testing.T) {
		resp, _ := post(url.Values{"name": {"Carol"}, "code": {joinCode}, "next": {"/lesson"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/lesson" {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == authn.SessionCookie {
				session = c
			}
		}
		if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Value == "" {
			t.Fatalf("session cookie %+v", session)
		}
	})
	t.Run("OKOffSiteNextIsIgnored", func(t *testing.T) {
		resp, _ := post(url.Values{"name": {"Dan"}, "code": {joinCode}, "next": {"//evil.example/x"}})
		if resp.Header.Get("Location") != "/" {
			t.Fatalf("redirected to %q", resp.Header.Get("Location"))
		}
	})
	t.Run("ErrWrongCodeShowsThePageAgainEscaped", func(t *testing.T) {
		resp, body := post(url.Values{"name": {`<img src=x onerror=alert(1)>`}, "code": {"guess"}})
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "join code") ||
			strings.Contains(body, "<img src=x") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("ErrInvisibleCharacters", func(t *testing.T) {
		resp, body := post(url.Values{"name": {"bob\u202E"}, "code": {joinCode}}, "Accept", "application/json")
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "invisible character") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("ErrCrossSiteForm", func(t *testing.T) {
		resp, _ := post(url.Values{"name": {"Eve"}, "code": {joinCode}}, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
	t.Run("ErrRateLimited", func(t *testing.T) {
		var last int
		for range 80 {
			resp, _ := post(url.Values{"name": {"Mallory"}, "code": {"guess"}}, "Accept", "application/json")
			last = resp.StatusCode
			if last == http.StatusTooManyRequests {
				if resp.Header.Get("Retry-After") == "" {
					t.Fatal("429 without Retry-After")
				}
				return
			}
		}
		t.Fatalf("80 quick guesses were never limited (last %d)", last)
	})
	t.Run("OKAnonymousHasNoClusterAdmin", func(t *testing.T) {
		resp, err := http.Get(lab.URL() + "/api/v1/namespaces/internals-demo/pods")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("anonymous list in classroom mode: %d", resp.StatusCode)
		}
		if _, err := lab.Clientset(t).RbacV1().ClusterRoleBindings().Get(context.Background(), frontdoor.LocalModeBinding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the local-mode binding in classroom mode: %v", err)
		}
	})
}
