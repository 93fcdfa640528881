package classroom_test

// kubelab's own endpoints attacked by students: reset and the endpoints
// that act for a user (labs, kubeconfig, whoami, traces), with kubectl's
// --as and without RBAC. The web pages' side is endpoints_web_test.go.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	req, _ = http.NewRequest("POST", lab.URL()+"/kubelab/v1/kubeconfig", nil)
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
