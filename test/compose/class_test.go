package compose_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/webclient"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

// TestClass is the instructor's class end to end: the README's commands,
// the published ports, three students (one with a Thai name) who sign in
// over HTTPS, use the real kubectl, pass a lab step and submit a quiz, and
// an instructor and a grader who see all three; then the whole class taken
// down and brought up again, with nothing lost.
func TestClass(t *testing.T) {
	t.Parallel()
	p := newProject(t, "class")
	p.up(t)

	// The admin kubeconfig, copied out as the README says: it names the
	// published HTTPS port, under kubelab's CA, and works as it is.
	admin := p.adminKubeconfig(t)
	if got := serverOf(t, admin); got != p.httpsURL() {
		t.Fatalf("the admin kubeconfig names %s, want the published %s", got, p.httpsURL())
	}
	clitest.KubectlWithOK(t, admin, "get", "namespaces")

	// The fingerprint kubelab prints is that of the CA its HTTPS port
	// serves under: what students compare in their browsers.
	ca := caOf(t, admin)
	logs := p.compose(t, "logs", "--no-color", "kubelab")
	if fp := fingerprint(ca); !strings.Contains(logs, "has the SHA-256 fingerprint "+fp) {
		t.Fatalf("the logs do not print the CA's fingerprint %s:\n%s", fp, logs)
	}
	checkServedUnder(t, p.httpsPort, ca)

	// Plain HTTP through the published port comes from Docker's network,
	// not loopback: it is sent to the published HTTPS port.
	redirect := noRedirects(nil)
	resp, _ := webclient.Send(t, redirect, "GET", p.httpURL()+"/signin", "")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect || loc != p.httpsURL()+"/signin" {
		t.Fatalf("plain HTTP: %d to %q, want 307 to %s/signin", resp.StatusCode, loc, p.httpsURL())
	}

	typed := []string{"Alice", "Bob", "สมชาย ใจดี"}
	var class []*student
	for _, name := range typed {
		s := p.signIn(t, ca, name)
		s.downloadKubeconfig(t, p)
		class = append(class, s)
	}
	for _, s := range class {
		// The lesson's pods are in each student's namespace; the student
		// writes there, and nowhere else.
		if out := clitest.KubectlWithOK(t, s.kubeconfig, "get", "pods", "-o", "name"); !strings.Contains(out, "pod/ssa-demo") {
			t.Fatalf("%s's pods: %s", s.name, out)
		}
		clitest.KubectlWithOK(t, s.kubeconfig, "create", "configmap", "mine", "--from-literal=by="+s.name)
		other := class[0]
		if s == other {
			other = class[1]
		}
		if _, stderr, err := clitest.KubectlWith(t, s.kubeconfig, "-n", other.name, "get", "pods"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Fatalf("%s listed %s's pods: %v %s", s.name, other.name, err, stderr)
		}
		s.passReadKey(t)
		s.submitQuiz(t)
	}
	// The page's terminal runs the labs' lines as printed, shell and
	// all, in a process of the container's own binary.
	alice := class[0]
	line := "kubectl -n " + alice.name + " label pod ssa-demo demo-round=$(date +%s) --overwrite && kubectl get pods -o name | grep -c ssa-demo"
	if out, code := alice.runInTerminal(t, line); code != 0 || out != "pod/ssa-demo labeled\n1\n" {
		t.Fatalf("%q in %s's terminal: exit %d, printed %q", line, alice.name, code, out)
	}

	// The instructor's dashboard and the grader's JSON and CSV: all
	// three, under the names as typed.
	var dash labhttp.ClassView
	getJSON(t, p.httpsURL()+"/kubelab/v1/labs/dashboard", ca, p.instructorToken, &dash)
	for i, s := range class {
		row := findRow(dash, s.name)
		if row == nil || row.DisplayName != typed[i] || row.Namespace != s.name {
			t.Fatalf("the dashboard's row of %s: %+v, want the display name %q", s.name, row, typed[i])
		}
	}
	results := get(t, p.httpsURL()+"/kubelab/v1/grader/results?class="+className, ca, p.graderToken)
	csv := get(t, p.httpsURL()+"/kubelab/v1/grader/results.csv?class="+className, ca, p.graderToken)
	for i, s := range class {
		name, _ := json.Marshal(typed[i])
		if !strings.Contains(results, `"displayName":`+string(name)) || !strings.Contains(results, `"userId":"`+s.name+`"`) {
			t.Fatalf("the grader's results lack %s (%s): %s", typed[i], s.name, results)
		}
		if !strings.Contains(csv, typed[i]) {
			t.Fatalf("the grader's CSV lacks %s:\n%s", typed[i], csv)
		}
	}

	t.Run("down then up", func(t *testing.T) {
		p.compose(t, "down", "--timeout", "20")
		p.upAgain(t)
		// The same CA (its fingerprint unchanged), the same students, their
		// sessions, kubeconfigs, namespaces and attempts.
		if got := caOf(t, p.adminKubeconfig(t)); !got.Equal(ca) {
			t.Fatal("the CA changed across down and up")
		}
		for i, s := range class {
			var who server.Whoami
			s.getJSON(t, "/kubelab/v1/whoami", &who)
			if who.Namespace != s.name || who.DisplayName != typed[i] || who.KubectlServer != p.httpsURL() {
				t.Fatalf("%s's session after down and up: whoami says %+v", s.name, who)
			}
			if out := clitest.KubectlWithOK(t, s.kubeconfig, "get", "configmap", "mine", "-o", "jsonpath={.data.by}"); out != s.name {
				t.Fatalf("%s's ConfigMap after down and up: %q", s.name, out)
			}
			if !strings.Contains(get(t, p.httpsURL()+"/kubelab/v1/grader/results.csv?class="+className, ca, p.graderToken), typed[i]) {
				t.Fatalf("%s's attempt is gone after down and up", typed[i])
			}
		}
	})
}

// student is one who signed in through the published HTTPS port.
type student struct {
	name       string // the user and namespace kubelab gave them
	base       string // the published HTTPS address
	browser    *http.Client
	kubeconfig string
}

// signIn signs in as a script does (POST /signin with the join code, JSON
// asked for), trusting kubelab's CA as the README tells students to.
func (p *project) signIn(t *testing.T, ca *x509.Certificate, display string) *student {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	s := &student{base: p.httpsURL(), browser: noRedirects(ca)}
	s.browser.Jar = jar
	form := url.Values{"name": {display}, "code": {p.joinCode}}.Encode()
	resp, body := webclient.Send(t, s.browser, "POST", s.base+"/signin", form,
		"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
	var st struct{ Name string }
	if err := json.Unmarshal([]byte(body), &st); resp.StatusCode != http.StatusCreated || err != nil || st.Name == "" {
		t.Fatalf("sign in as %q: %d %s", display, resp.StatusCode, body)
	}
	s.name = st.Name
	return s
}

// downloadKubeconfig downloads a kubeconfig as the page's button does: it
// must name the published HTTPS port and the student's namespace.
func (s *student) downloadKubeconfig(t *testing.T, p *project) {
	t.Helper()
	resp, kc := webclient.Send(t, s.browser, "POST", s.base+"/kubelab/v1/kubeconfig", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("kubeconfig of %s: %d %s", s.name, resp.StatusCode, kc)
	}
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serverOf(t, s.kubeconfig); got != p.httpsURL() {
		t.Fatalf("%s's kubeconfig names %s, want the published %s", s.name, got, p.httpsURL())
	}
}

// runInTerminal runs line in the page's terminal, over its websocket as
// the page opens it, and returns what it printed and its exit status.
func (s *student) runInTerminal(t *testing.T, line string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := *s.browser
	client.Timeout = 0 // the websocket's context bounds it
	u, _ := url.Parse(s.base)
	conn, _, err := websocket.Dial(ctx, "wss://"+u.Host+"/ui/ws/terminal", &websocket.DialOptions{
		HTTPClient: &client, HTTPHeader: http.Header{"Origin": {s.base}}})
	if err != nil {
		t.Fatalf("%s's terminal: %v", s.name, err)
	}
	defer conn.CloseNow()
	run, _ := json.Marshal(map[string]string{"t": "run", "line": line})
	if err := conn.Write(ctx, websocket.MessageText, run); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("%q in %s's terminal: %v; so far %q %q", line, s.name, err, out.String(), errOut.String())
		}
		var m struct {
			T    string `json:"t"`
			D    string `json:"d"`
			Code *int   `json:"code"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("the terminal sent %s", b)
		}
		switch m.T {
		case "o":
			out.WriteString(m.D)
		case "e":
			errOut.WriteString(m.D)
		case "exit":
			if errOut.Len() > 0 {
				t.Logf("%q wrote to stderr: %s", line, errOut.String())
			}
			return out.String(), *m.Code
		}
	}
}

// passReadKey passes the etcd lab's first step: the student reads their
// own pod's key in the page's inspector.
func (s *student) passReadKey(t *testing.T) {
	t.Helper()
	if resp, body := webclient.Send(t, s.browser, "POST", s.base+"/kubelab/v1/labs/etcd/start", "", "Accept", "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("%s starting the etcd lab: %d %s", s.name, resp.StatusCode, body)
	}
	if resp, body := webclient.Send(t, s.browser, "GET", s.base+"/ui/etcd/value?key=/registry/pods/"+s.name+"/ssa-demo", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("%s's inspector: %d %s", s.name, resp.StatusCode, body)
	}
	eventually.Holds(t, s.name+" passing etcd/read-key", func() (bool, error) {
		var lab labhttp.LabView
		s.getJSON(t, "/kubelab/v1/labs/etcd", &lab)
		for _, step := range lab.Steps {
			if step.ID == "read-key" {
				return step.State == labhttp.StatePassed, nil
			}
		}
		return false, fmt.Errorf("no step read-key in %+v", lab)
	})
}

// submitQuiz opens the lesson's quiz and submits an answer to each
// question: the first option, whatever it scores.
func (s *student) submitQuiz(t *testing.T) {
	t.Helper()
	var v quiz.View
	s.getJSON(t, "/kubelab/v1/quizzes/"+quiz.WatchQuizID, &v)
	var answers []quiz.Answer
	for _, q := range v.Questions {
		answers = append(answers, quiz.Answer{Question: q.ID, Choice: q.Options[0].ID})
	}
	body, _ := json.Marshal(map[string]any{"attempt": v.Attempt, "answers": answers})
	resp, got := webclient.Send(t, s.browser, "POST", s.base+"/kubelab/v1/quizzes/"+quiz.WatchQuizID+"/attempts", string(body),
		"Content-Type", "application/json", "Accept", "application/json")
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Fatalf("%s's quiz: %d %s", s.name, resp.StatusCode, got)
	}
}

// getJSON GETs path with the student's session and decodes the answer.
func (s *student) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, body := webclient.Send(t, s.browser, "GET", s.base+path, "", "Accept", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s GET %s: %d %s", s.name, path, resp.StatusCode, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%s GET %s: %v %s", s.name, path, err, body)
	}
}

// adminKubeconfig copies the admin kubeconfig out of the kubelab
// container, as the README says, into a file of the test's.
func (p *project) adminKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	p.compose(t, "cp", "kubelab:/data/kubeconfig", path)
	return path
}

func serverOf(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
}

// caOf is the CA a kubeconfig trusts.
func caOf(t *testing.T, kubeconfig string) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := x509.ParseCertificates(pemBlock(t, cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].CertificateAuthorityData))
	if err != nil || len(pool) != 1 {
		t.Fatalf("the kubeconfig's CA: %v (%d certificates)", err, len(pool))
	}
	return pool[0]
}

// fingerprint is a certificate's SHA-256 fingerprint as browsers show it.
func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// checkServedUnder connects to the published HTTPS port trusting nothing,
// as a student's browser first does, and checks that the certificate it is
// shown is signed by ca.
func checkServedUnder(t *testing.T, port string, ca *x509.Certificate) {
	t.Helper()
	conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("the HTTPS port's certificate is not kubelab's CA's: %v", err)
	}
}

// noRedirects is a client that trusts ca (none: the system's) and shows
// each answer as it comes, redirects included.
func noRedirects(ca *x509.Certificate) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{}}
	if ca != nil {
		tr.TLSClientConfig.RootCAs = x509.NewCertPool()
		tr.TLSClientConfig.RootCAs.AddCert(ca)
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// get GETs target with a bearer token, trusting ca, and wants 200.
func get(t *testing.T, target string, ca *x509.Certificate, token string) string {
	t.Helper()
	resp, body := webclient.Send(t, noRedirects(ca), "GET", target, "", "Authorization", "Bearer "+token, "Accept", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	return body
}

func getJSON(t *testing.T, target string, ca *x509.Certificate, token string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, target, ca, token)), v); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
}

func findRow(v labhttp.ClassView, user string) *labhttp.StudentRow {
	for i := range v.Students {
		if v.Students[i].User == user {
			return &v.Students[i]
		}
	}
	return nil
}

// pemBlock is the DER bytes of a PEM certificate.
func pemBlock(t *testing.T, data []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("not PEM: %q", data)
	}
	return block.Bytes
}
