package classroom_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/webclient"
)

const removeInstructorToken = "remove-instructor-token-0123456789"

// TestRemovingAStudentGivesTheSeatBack: each sign-in with the shared join
// code takes a seat, and none was ever given back, so anyone with the
// code and a few addresses filled the class for good. The instructor
// removes a student: at once their kubectl and their browser get 401,
// their namespace goes, they leave the room, and their seat takes a new
// join (their display name too, as a new student). A student, and an
// instructor's session on a request from another site, remove no one.
func TestRemovingAStudentGivesTheSeatBack(t *testing.T) {
	t.Parallel()
	c := startClass(t, "--max-students=2", "--instructor-token", removeInstructorToken)
	alice, bob := join(t, c.URL(), "Alice"), join(t, c.URL(), "Bob")
	signin := func(name string) (int, string) {
		form := url.Values{"name": {name}, "code": {joinCode}}.Encode()
		resp, body := webclient.Send(t, http.DefaultClient, "POST", c.URL()+"/signin", form,
			"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
		return resp.StatusCode, body
	}
	if code, body := signin("Carol"); code != http.StatusForbidden || !strings.Contains(body, "the class is full") {
		t.Fatalf("a third join into a class of 2: %d %s", code, body)
	}
	remove := "/kubelab/v1/students/" + alice.name

	// Bob removes no one, by kubectl's token or by his browser.
	if resp, body := bob.apiDo(t, "DELETE", remove); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob removes alice with his token: %d %s, want 403", resp.StatusCode, body)
	}
	if resp, body := bob.do(t, "DELETE", remove, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob removes alice from his browser: %d %s, want 403", resp.StatusCode, body)
	}
	// Nor does another site's page, with the instructor's dashboard session.
	jar, _ := cookiejar.New(nil)
	room := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, body := webclient.Send(t, room, "POST", c.URL()+"/labs/dashboard/signin", url.Values{"token": {removeInstructorToken}}.Encode(),
		"Content-Type", "application/x-www-form-urlencoded"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the instructor's dashboard sign-in: %d %s", resp.StatusCode, body)
	}
	if resp, body := webclient.Send(t, room, "DELETE", c.URL()+remove, "", "Origin", "https://cats.example", "Sec-Fetch-Site", "cross-site"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another site's page removes alice with the instructor's session: %d %s, want 403", resp.StatusCode, body)
	}
	if _, _, err := alice.kubectl(t, "get", "pods"); err != nil {
		t.Fatalf("alice's kubectl before anyone removed her: %v", err)
	}

	instructor := []string{"Authorization", "Bearer " + removeInstructorToken}
	if resp, body := webclient.Send(t, http.DefaultClient, "DELETE", c.URL()+remove, "", instructor...); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"displayName":"Alice"`) {
		t.Fatalf("the instructor removes alice: %d %s", resp.StatusCode, body)
	}
	if resp, body := alice.apiDo(t, "GET", "/api/v1/namespaces/"+alice.name+"/pods"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice's kubeconfig token after she was removed: %d %s, want 401", resp.StatusCode, body)
	}
	if _, stderr, err := alice.kubectl(t, "get", "pods"); err == nil || !strings.Contains(stderr, "Unauthorized") {
		t.Errorf("alice's kubectl after she was removed: %v %s, want Unauthorized", err, stderr)
	}
	if resp, body := alice.do(t, "POST", "/kubelab/v1/kubeconfig", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice's browser session after she was removed: %d %s, want 401", resp.StatusCode, body)
	}
	if resp, body := webclient.Send(t, http.DefaultClient, "GET", c.URL()+"/kubelab/v1/labs/dashboard", "", instructor...); resp.StatusCode != http.StatusOK ||
		strings.Contains(body, `"user":"`+alice.name+`"`) || !strings.Contains(body, `"user":"`+bob.name+`"`) {
		t.Errorf("the room after alice was removed: %d %s, want bob and not alice", resp.StatusCode, body)
	}
	eventually.Holds(t, "alice's namespace is gone", func() (bool, error) {
		_, err := c.admin(t).CoreV1().Namespaces().Get(t.Context(), alice.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if resp, body := webclient.Send(t, http.DefaultClient, "DELETE", c.URL()+remove, "", instructor...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("removing alice again: %d %s, want 404", resp.StatusCode, body)
	}

	// Her seat is free: "Alice" joins again, as a new student.
	again := join(t, c.URL(), "Alice")
	if _, _, err := again.kubectl(t, "get", "pods"); err != nil {
		t.Errorf("the new Alice's kubectl: %v", err)
	}
	if resp, _ := alice.apiDo(t, "GET", "/api/v1/namespaces/"+again.name+"/pods"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the removed alice's token in the new Alice's namespace: %d, want 401", resp.StatusCode)
	}
}
