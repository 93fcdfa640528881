package classroom_test

import (
	"context"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/webclient"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSigningInAsAnExistingNamespaceOrUserGetsAnotherName: a student who
// signs in with the name of a namespace the instructor made (solutions,
// with the answers in a Secret), or of a user the instructor bound
// somewhere (a TA), is given another name, and gets neither the
// namespace nor the TA's rights. A namespace kubelab made for a student
// whose sign-in failed part-way is still taken up by the next sign-in.
func TestSigningInAsAnExistingNamespaceOrUserGetsAnotherName(t *testing.T) {
	t.Parallel()
	c := startClass(t)
	admin := c.adminKubeconfig()
	clitest.KubectlWithOK(t, admin, "create", "namespace", "solutions")
	clitest.KubectlWithOK(t, admin, "-n", "solutions", "create", "secret", "generic", "answers", "--from-literal=q1=b")
	clitest.KubectlWithOK(t, admin, "create", "namespace", "staff")
	clitest.KubectlWithOK(t, admin, "-n", "staff", "create", "rolebinding", "ta", "--clusterrole=edit", "--user=ta-anna")
	clitest.KubectlWithOK(t, admin, "create", "clusterrolebinding", "ta-view", "--clusterrole=view", "--user=ta-ben")

	// Each probe is what the name's owner may do and the student may not.
	for _, tc := range []struct{ display, taken, probeNS, probe string }{
		{"solutions", "solutions", "solutions", "secrets"},
		{"ta-anna", "ta-anna", "staff", "secrets"},
		{"TA Ben", "ta-ben", "solutions", "pods"},
	} {
		s := join(t, c.URL(), tc.display)
		name := s.name
		out, stderr, err := s.kubectl(t, "-n", tc.probeNS, "get", tc.probe, "-o", "name")
		if err == nil || !strings.Contains(stderr, "Forbidden") && !strings.Contains(stderr, "forbidden") {
			t.Fatalf("%s (signed in as %q) listed the %s of %s: %v\n%s%s", name, tc.display, tc.probe, tc.probeNS, err, out, stderr)
		}
		if name == tc.taken {
			t.Fatalf("signing in as %q gave the name %q, which is someone else's", tc.display, name)
		}
		// The student's own namespace works.
		if out := clitest.KubectlWithOK(t, s.kubeconfig, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/ssa-demo") {
			t.Fatalf("%s's own pods: %q", name, out)
		}
	}
	// A refused name leaves no namespace behind.
	if out, _, err := clitest.KubectlWith(t, admin, "get", "namespace", "ta-anna"); err == nil {
		t.Fatalf("signing in as ta-anna made its namespace: %s", out)
	}

	// What a failed sign-in for "carol" leaves: her namespace, made and
	// marked by kubelab, and her key given back. The next "carol" gets it.
	clitest.KubectlWithOK(t, admin, "create", "namespace", "carol")
	clitest.KubectlWithOK(t, admin, "label", "namespace", "carol", "kubelab.io/student=carol")
	if name := signIn(t, nil, c.URL(), "Carol").name; name != "carol" {
		t.Fatalf("the namespace made for carol was not taken up: got %q", name)
	}
	// A namespace marked for another name is not.
	clitest.KubectlWithOK(t, admin, "create", "namespace", "dave")
	clitest.KubectlWithOK(t, admin, "label", "namespace", "dave", "kubelab.io/student=carol")
	if name := signIn(t, nil, c.URL(), "Dave").name; name == "dave" {
		t.Fatal("a namespace marked for carol was given to dave")
	}
}

// TestStudentCannotImpersonateAMalformedServiceAccount: edit lets a student
// impersonate the service accounts of their namespace; a name that only
// looks like one of theirs (an extra part, an empty or upper-case part)
// is asked as a user, as kube-apiserver does, and refused with kube's 403,
// rather than served as a made-up identity.
func TestStudentCannotImpersonateAMalformedServiceAccount(t *testing.T) {
	t.Parallel()
	alice := join(t, startClass(t).URL(), "Alice")
	name := alice.name
	sa := "system:serviceaccount:" + name + ":default"
	if out := clitest.KubectlWithOK(t, alice.kubeconfig, "--as", sa, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != sa {
		t.Fatalf("as her own service account, %s is %q", name, out)
	}
	for _, as := range []string{sa + ":x", "system:serviceaccount:" + name + ":", "system:serviceaccount:" + strings.ToUpper(name) + ":default"} {
		// A raw get shows the server's Status (auth whoami and discovery
		// put messages of their own in front of it).
		out, stderr, err := alice.kubectl(t, "--as", as, "get", "--raw", "/api/v1/namespaces/"+name+"/pods")
		want := `users "` + as + `" is forbidden: User "` + name + `" cannot impersonate resource "users" in API group "" at the cluster scope`
		if err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("%s as %q: %v\n%s%s\nwant %s", name, as, err, out, stderr, want)
		}
	}
}

// TestInvisibleAndBlankDisplayNamesAreRefused: a name an instructor cannot
// read on the room's page (a Hangul filler or Braille's blank pattern
// draws nothing, and dots name no one), or one made to look like another's (Latin "bob" with a
// Cyrillic "о"), is refused at sign-in with the reason, as a Status for a script
// and on the page for a browser, and leaves no namespace or user behind.
func TestInvisibleAndBlankDisplayNamesAreRefused(t *testing.T) {
	t.Parallel()
	c := startClass(t)
	admin := c.admin(t)
	before, err := admin.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for display, want := range map[string]string{
		"\u3164":       "invisible character U+3164",
		"Bob\uFFA0":    "invisible character U+FFA0",
		"...":          "no letter or digit",
		"\u3000\u3000": "it is empty",
		"b\u043eb":     "it mixes Latin and Cyrillic letters",
		"Bob\u2800":    "Braille pattern U+2800",
		"\u2800\u2800": "Braille pattern U+2800",
	} {
		form := url.Values{"name": {display}, "code": {joinCode}}.Encode()
		jar, _ := cookiejar.New(nil)
		resp, body := webclient.Send(t, &http.Client{Jar: jar}, "POST", c.URL()+"/signin", form,
			"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, want) || !strings.Contains(body, `"field":"name"`) {
			t.Errorf("sign in as %q: %d %s, want 422 saying %q", display, resp.StatusCode, body, want)
		}
		if cookies := jar.Cookies(resp.Request.URL); len(cookies) != 0 {
			t.Errorf("sign in as %q set %v", display, cookies)
		}
		// The browser's form gets its page back, with the reason.
		resp, body = webclient.Send(t, &http.Client{}, "POST", c.URL()+"/signin", form, "Content-Type", "application/x-www-form-urlencoded")
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "<form") || !strings.Contains(body, want) {
			t.Errorf("the form signing in as %q: %d, want the page again with %q:\n%s", display, resp.StatusCode, want, body)
		}
	}
	after, err := admin.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != len(before.Items) {
		t.Errorf("refused sign-ins left namespaces: %d before, %d after", len(before.Items), len(after.Items))
	}
}
