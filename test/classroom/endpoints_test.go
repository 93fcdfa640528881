package classroom_test

// kubelab's own endpoints attacked by students: reset and the endpoints
// that act for a user (labs, kubeconfig, whoami, traces), with kubectl's
// --as and without RBAC. The web pages' side is endpoints_web_test.go.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
)

const (
	epInstructorToken = "endpoints-instructor-token-0123456789"
	epResetPath       = "/kubelab/v1/labs/reset"
)

// epClass is a class with an instructor token.
func epClass(t *testing.T) *class {
	t.Helper()
	return startClass(t, "--class-name", "k8s-101", "--instructor-token", epInstructorToken)
}

// postRaw POSTs an empty JSON object to path with the student's kubectl.
func postRaw(t *testing.T, s *student, path string, extra ...string) (string, string, error) {
	t.Helper()
	return s.kubectl(t, append(extra, "create", "--raw", path, "-f", epEmptyJSON(t))...)
}

// epState is what a reset would change in a namespace: its pods' UIDs
// and whether a marker ConfigMap is still there.
type epState struct {
	pods   []types.UID
	marker bool
}

func epMark(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}, Data: map[string]string{"why": "a reset would delete it"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func epStateOf(t *testing.T, cs kubernetes.Interface, ns string) epState {
	t.Helper()
	ctx := context.Background()
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
	t.Parallel()
	c := epClass(t)
	admin := c.admin(t)
	alice := join(t, c.URL(), "Alice")
	epMark(t, admin, "internals-demo")
	epMark(t, admin, alice.name)
	demo, own := epStateOf(t, admin, "internals-demo"), epStateOf(t, admin, alice.name)

	sa := "system:serviceaccount:" + alice.name + ":default"
	_, stderr, err := postRaw(t, alice, epResetPath, "--as", sa)
	if err == nil || !strings.Contains(stderr, "impersonation applies to the Kubernetes API only") {
		t.Errorf("reset as %s: %v %s", sa, err, stderr)
	}
	for _, path := range []string{"/kubelab/v1/kubeconfig", "/kubelab/v1/whoami", "/kubelab/v1/traces", "/kubelab/v1/labs"} {
		out, stderr, err := alice.kubectl(t, "--as", sa, "get", "--raw", path)
		if err == nil || !strings.Contains(stderr, "impersonation applies to the Kubernetes API only") {
			t.Errorf("GET %s as %s: %v\n%s%s", path, sa, err, out, stderr)
		}
	}
	if got := epStateOf(t, admin, "internals-demo"); !got.same(demo) {
		t.Errorf("internals-demo changed: %+v, was %+v", got, demo)
	}
	if got := epStateOf(t, admin, alice.name); !got.same(own) {
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
	t.Parallel()
	c := epClass(t)
	admin := c.admin(t)
	alice := join(t, c.URL(), "Alice")
	epMark(t, admin, alice.name)
	before := epStateOf(t, admin, alice.name)
	if err := admin.RbacV1().RoleBindings(alice.name).Delete(context.Background(), "kubelab-student", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "alice losing her access", func() (bool, error) {
		out, _, _ := alice.kubectl(t, "auth", "can-i", "deletecollection", "pods", "-n", alice.name)
		return strings.TrimSpace(out) == "no", nil
	})

	_, stderr, err := postRaw(t, alice, epResetPath)
	want := `pods is forbidden: User "` + alice.name + `" cannot deletecollection resource "pods" in API group "" in the namespace "` + alice.name + `"`
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("reset without RBAC: %v %s\nwant %s", err, stderr, want)
	}
	if got := epStateOf(t, admin, alice.name); !got.same(before) {
		t.Errorf("%s changed: %+v, was %+v", alice.name, got, before)
	}
}

// The student's own reset works, and its deletes are theirs: their
// traces list them, authorized by RBAC.
func TestEndpointsResetIsTheStudentsDeletes(t *testing.T) {
	t.Parallel()
	c := epClass(t)
	admin := c.admin(t)
	alice := join(t, c.URL(), "Alice")
	epMark(t, admin, alice.name)
	before := epStateOf(t, admin, alice.name)

	if out, stderr, err := postRaw(t, alice, epResetPath); err != nil {
		t.Fatalf("reset: %v\n%s%s", err, out, stderr)
	}
	after := epStateOf(t, admin, alice.name)
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
