package classroom_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server"
)

const identityJoinCode = "join-identity"

func identityLab(t *testing.T) *kubelabtest.Lab {
	t.Helper()
	return kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.JoinCode = identityJoinCode
		c.SecureListen = "127.0.0.1:0"
	})
}

// signIn joins the class as display, as a script would (POST /signin for
// JSON), and returns the name the class gave and a kubeconfig for the
// real kubectl holding the session's token.
func signIn(t *testing.T, lab *kubelabtest.Lab, display string) (name, kubeconfig string) {
	t.Helper()
	form := url.Values{"name": {display}, "code": {identityJoinCode}}
	req, _ := http.NewRequest(http.MethodPost, lab.URL()+"/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("sign in as %q: %d %s", display, resp.StatusCode, body)
	}
	var st struct{ Name string }
	if err := json.Unmarshal(body, &st); err != nil || st.Name == "" {
		t.Fatalf("sign in as %q: %v %s", display, err, body)
	}
	var token string
	for _, c := range resp.Cookies() {
		if c.Name == authn.SessionCookie {
			token = c.Value
		}
	}
	if token == "" {
		t.Fatalf("sign in as %q set no session cookie", display)
	}
	// The admin kubeconfig's server and CA, with the student's token.
	cfg, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token = token
	}
	for _, c := range cfg.Contexts {
		c.Namespace = st.Name
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return st.Name, kubeconfig
}

func kubectlOK(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, stderr, err := clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, stderr)
	}
	return out
}

// TestSigningInAsAnExistingNamespaceOrUserGetsAnotherName: a student who
// signs in with the name of a namespace the instructor made (solutions,
// with the answers in a Secret), or of a user the instructor bound
// somewhere (a TA), is given another name, and gets neither the
// namespace nor the TA's rights. A namespace kubelab made for a student
// whose sign-in failed part-way is still taken up by the next sign-in.
func TestSigningInAsAnExistingNamespaceOrUserGetsAnotherName(t *testing.T) {
	lab := identityLab(t)
	admin := lab.KubeconfigPath()
	kubectlOK(t, admin, "create", "namespace", "solutions")
	kubectlOK(t, admin, "-n", "solutions", "create", "secret", "generic", "answers", "--from-literal=q1=b")
	kubectlOK(t, admin, "create", "namespace", "staff")
	kubectlOK(t, admin, "-n", "staff", "create", "rolebinding", "ta", "--clusterrole=edit", "--user=ta-anna")
	kubectlOK(t, admin, "create", "clusterrolebinding", "ta-view", "--clusterrole=view", "--user=ta-ben")

	kubectl := clitest.Kubectl(t)
	// Each probe is what the name's owner may do and the student may not.
	for _, tc := range []struct{ display, taken, probeNS, probe string }{
		{"solutions", "solutions", "solutions", "secrets"},
		{"ta-anna", "ta-anna", "staff", "secrets"},
		{"TA Ben", "ta-ben", "solutions", "pods"},
	} {
		name, kubeconfig := signIn(t, lab, tc.display)
		out, stderr, err := clitest.Run(t, kubectl, "--kubeconfig", kubeconfig, "-n", tc.probeNS, "get", tc.probe, "-o", "name")
		if err == nil || !strings.Contains(stderr, "Forbidden") && !strings.Contains(stderr, "forbidden") {
			t.Fatalf("%s (signed in as %q) listed the %s of %s: %v\n%s%s", name, tc.display, tc.probe, tc.probeNS, err, out, stderr)
		}
		if name == tc.taken {
			t.Fatalf("signing in as %q gave the name %q, which is someone else's", tc.display, name)
		}
		// The student's own namespace works.
		if out := kubectlOK(t, kubeconfig, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/ssa-demo") {
			t.Fatalf("%s's own pods: %q", name, out)
		}
	}
	// A refused name leaves no namespace behind.
	if out, _, err := clitest.Run(t, kubectl, "--kubeconfig", admin, "get", "namespace", "ta-anna"); err == nil {
		t.Fatalf("signing in as ta-anna made its namespace: %s", out)
	}

	// What a failed sign-in for "carol" leaves: her namespace, made and
	// marked by kubelab, and her key given back. The next "carol" gets it.
	kubectlOK(t, admin, "create", "namespace", "carol")
	kubectlOK(t, admin, "label", "namespace", "carol", "kubelab.io/student=carol")
	if name, _ := signIn(t, lab, "Carol"); name != "carol" {
		t.Fatalf("the namespace made for carol was not taken up: got %q", name)
	}
	// A namespace marked for another name is not.
	kubectlOK(t, admin, "create", "namespace", "dave")
	kubectlOK(t, admin, "label", "namespace", "dave", "kubelab.io/student=carol")
	if name, _ := signIn(t, lab, "Dave"); name == "dave" {
		t.Fatal("a namespace marked for carol was given to dave")
	}
}

// TestStudentCannotImpersonateAMalformedServiceAccount: edit lets a student
// impersonate the service accounts of their namespace; a name that only
// looks like one of theirs (an extra part, an empty or upper-case part)
// is asked as a user, as kube-apiserver does, and refused with kube's 403,
// rather than served as a made-up identity.
func TestStudentCannotImpersonateAMalformedServiceAccount(t *testing.T) {
	lab := identityLab(t)
	name, kubeconfig := signIn(t, lab, "Alice")
	kubectl := clitest.Kubectl(t)
	sa := "system:serviceaccount:" + name + ":default"
	if out := kubectlOK(t, kubeconfig, "--as", sa, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != sa {
		t.Fatalf("as her own service account, %s is %q", name, out)
	}
	for _, as := range []string{sa + ":x", "system:serviceaccount:" + name + ":", "system:serviceaccount:" + strings.ToUpper(name) + ":default"} {
		// A raw get shows the server's Status (auth whoami and discovery
		// put messages of their own in front of it).
		out, stderr, err := clitest.Run(t, kubectl, "--kubeconfig", kubeconfig, "--as", as, "get", "--raw", "/api/v1/namespaces/"+name+"/pods")
		want := `users "` + as + `" is forbidden: User "` + name + `" cannot impersonate resource "users" in API group "" at the cluster scope`
		if err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("%s as %q: %v\n%s%s\nwant %s", name, as, err, out, stderr, want)
		}
	}
}
