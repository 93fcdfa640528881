package terminal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/terminal"
)

// The hostile tests: one or more per rule of docs/SECURITY.md, "The
// terminal". Each tries what a curious or malicious student would, and
// checks both the friendly refusal and that nothing happened.

// secretFile is a file of the server's that no command may read.
func secretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server-secret.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n  secret: SERVER-SECRET-CONTENT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// refused runs line and checks it was refused with want in the message,
// a failing status, and nothing the server's files or others must not see.
func refused(t *testing.T, tm *term, line, want string) {
	t.Helper()
	r := tm.run(line, "")
	if r.Code == 0 || !strings.Contains(r.all(), want) || strings.Contains(r.all(), "SERVER-SECRET-CONTENT") {
		t.Errorf("%s: %+v, want refused with %q", line, r, want)
	}
}

func TestHostileNoShell(t *testing.T) {
	t.Parallel()
	lab := startTerminal(t)
	tm := open(t, lab, nil)
	out := filepath.Join(t.TempDir(), "redirected")
	for line, want := range map[string]string{
		"kubectl get pods | grep ssa":       "no pipes",
		"kubectl get pods > " + out:         "no pipes, redirects",
		"kubectl get pods; kubectl version": "several commands",
		"kubectl get pods && id":            "no shell",
		"kubectl get pods -l $(id -u)":      "no variables or command substitution",
		"kubectl get pods -l `id`":          "no variables",
		`kubectl get pods -l "$HOME"`:       "no variables",
		"kubectl apply -f - <<EOF":          "stdin box",
		"bash -c id":                        "kubectl and etcdctl only",
		"sh":                                "kubectl and etcdctl only",
		"/bin/kubectl version":              "kubectl and etcdctl only",
		`kubectl get pods "unterminated`:    "close the quote",
	} {
		refused(t, tm, line, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a redirect wrote %s", out)
	}
	// Quotes are honoured as a shell's are: one argument, not three.
	if r := tm.run(`kubectl get pods -o 'jsonpath={.items[?(@.metadata.name=="ssa-demo")].metadata.name}'`, ""); r.Out != "ssa-demo" {
		t.Errorf("quoted jsonpath: %+v", r)
	}
}

// The tests that set the process's environment (PATH, HOME, KUBECONFIG:
// what an in-process kubectl would read) run one at a time, before the
// rest run side by side, as students' commands do in one server.
func TestHostileNoPluginsOrPrograms(t *testing.T) {
	// A plugin and an editor and a diff program, on the server's PATH and
	// in its environment: none may run.
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	for _, name := range []string{"kubectl-foo", "vi", "diff", "editor"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("KUBE_EDITOR", filepath.Join(dir, "editor"))
	t.Setenv("EDITOR", filepath.Join(dir, "editor"))
	t.Setenv("KUBECTL_EXTERNAL_DIFF", filepath.Join(dir, "diff"))
	lab := startTerminal(t)
	tm := open(t, lab, nil)
	for line, want := range map[string]string{
		"kubectl foo":                                  `unknown command "foo"`,
		"kubectl plugin list":                          "plugins are other programs",
		"kubectl exec ssa-demo -- id":                  "needs a container",
		"kubectl attach ssa-demo":                      "needs a container",
		"kubectl debug ssa-demo":                       "needs a container",
		"kubectl cp ssa-demo:/etc/passwd x":            "kubectl cp",
		"kubectl port-forward ssa-demo 8080":           "opens a port",
		"kubectl proxy":                                "opens a port",
		"kubectl edit pod ssa-demo":                    "opens an editor",
		"kubectl -n internals-demo edit pod ssa-demo":  "opens an editor",
		"kubectl create --edit -f -":                   "opens an editor",
		"kubectl apply edit-last-applied pod/ssa-demo": "opens an editor",
		"kubectl run x --image=nginx -i":               "needs a container",
		"kubectl run x --image=nginx --tty":            "needs a container",
		"kubectl diff -f -":                            "diff program",
		"kubectl config view":                          "kubeconfig files",
		"kubectl alpha":                                "plugins",
		"kubectl wait --for=delete pod/x":              "signals",
		"kubectl rollout status deploy/web":            "signals",
		"kubectl logs ssa-demo":                        "no containers",
	} {
		refused(t, tm, line, want)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("a command ran a program of the server's")
	}
}

func TestHostileNoServerFiles(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	secret := secretFile(t)
	dir := filepath.Dir(secret)
	lab := startTerminal(t)
	tm := open(t, lab, nil)
	for line, want := range map[string]string{
		"kubectl apply -f " + secret:                                        "cannot read files",
		"kubectl apply --filename=" + secret:                                "cannot read files",
		"kubectl apply -f=" + secret:                                        "cannot read files",
		"kubectl apply -f" + secret:                                         "cannot read files",
		"kubectl create -f - -f " + secret:                                  "cannot read files",
		"kubectl apply -R -f " + dir:                                        "cannot read files",
		"kubectl apply -k " + dir:                                           "reads a directory",
		"kubectl apply --kustomize=" + dir:                                  "reads a directory",
		"kubectl kustomize " + dir:                                          "reads a directory",
		"kubectl get pods --kubeconfig=" + secret:                           "no kubeconfig",
		"kubectl get pods --cache-dir=" + dir + "/cache":                    "nothing is cached",
		"kubectl get pods -o go-template-file=" + secret:                    "template file",
		"kubectl get pods -o=jsonpath-file=" + secret:                       "template file",
		"kubectl get pods -ojsonpath-file=" + secret:                        "template file",
		"kubectl get pods -o custom-columns-file=" + secret:                 "template file",
		"kubectl get pods --output go-template-file --template=" + secret:   "template file",
		"kubectl create configmap x --from-file=" + secret:                  "names a file",
		"kubectl create configmap x --from-env-file=" + secret:              "names a file",
		"kubectl create secret generic x --from-file=k=" + secret:           "names a file",
		"kubectl create secret tls x --cert=" + secret + " --key=" + secret: "names a file",
		"kubectl patch pod ssa-demo --patch-file=" + secret:                 "names a file",
		"kubectl cluster-info dump --output-directory=" + dir + "/dump":     "names a file",
		"kubectl replace --force -f -":                                      "replace --force",
		"kubectl get pods --profile=cpu --profile-output=" + dir + "/p":     "writes files",
		"kubectl get pods -v=9":                                             "server's log",
		"kubectl get pods --v 9":                                            "server's log",
	} {
		refused(t, tm, line, want)
	}
	for _, p := range []string{dir + "/cache", dir + "/dump", dir + "/p", filepath.Join(home, ".kube")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a command wrote %s", p)
		}
	}
}

// TestHostileNoHomeKubeconfig: the server's own kubeconfig ($KUBECONFIG,
// $HOME/.kube/config) is neither read nor used, and nothing is cached
// under $HOME.
func TestHostileNoHomeKubeconfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	hits := &atomic.Int64{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer other.Close()
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: " + other.URL + "\ncontexts:\n- name: prod\n  context:\n    cluster: prod\n    user: prod\n    namespace: from-home\ncurrent-context: prod\nusers:\n- name: prod\n  user:\n    token: prod-token\n"
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(home, ".kube", "config"))
	lab := startTerminal(t)
	tm := open(t, lab, nil)
	for _, line := range []string{"kubectl get pods", "kubectl api-resources", "kubectl get pods --context=prod", "kubectl version"} {
		r := tm.run(line, "")
		if strings.Contains(r.all(), "from-home") {
			t.Errorf("%s used the server's kubeconfig: %+v", line, r)
		}
	}
	if r := tm.run("kubectl get pods -o name", ""); !strings.Contains(r.Out, "pod/ssa-demo") {
		t.Errorf("%+v", r)
	}
	if hits.Load() != 0 {
		t.Errorf("the server in the server's kubeconfig got %d requests", hits.Load())
	}
	if _, err := os.Stat(filepath.Join(home, ".kube", "cache")); !os.IsNotExist(err) {
		t.Error("kubectl cached discovery on the server's disk")
	}
}

func TestHostileNoOtherServers(t *testing.T) {
	t.Parallel()
	hits := &atomic.Int64{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-url\n"))
	}))
	defer other.Close()
	lab := startTerminal(t)
	tm := open(t, lab, nil)
	for line, want := range map[string]string{
		"kubectl get pods --server=" + other.URL:              "this kubelab only",
		"kubectl get pods -s " + other.URL:                    "this kubelab only",
		"kubectl get pods -s" + other.URL:                     "this kubelab only",
		"kubectl get pods --proxy-url=" + other.URL:           "this kubelab only",
		"kubectl apply -f " + other.URL + "/cm.yaml":          "reaches no other server",
		"kubectl apply --filename=" + other.URL + "/cm.yaml":  "reaches no other server",
		"kubectl get pods --token=someone-elses":              "carry your sign-in",
		"kubectl get pods --insecure-skip-tls-verify":         "this kubelab only",
		"kubectl get pods --certificate-authority=/etc/ssl/x": "carry your sign-in",
		"kubectl get pods --client-key=/etc/ssl/x":            "carry your sign-in",
		"kubectl get pods --context=prod":                     "no kubeconfig",
		"kubectl get pods --user=admin":                       "no kubeconfig",
		"kubectl get --raw " + other.URL:                      "",
	} {
		r := tm.run(line, "")
		if r.Code == 0 || !strings.Contains(r.all(), want) {
			t.Errorf("%s: %+v, want refused with %q", line, r, want)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("another server got %d requests", hits.Load())
	}
}

// TestHostileClassroom: in a class every command runs as the signed-in
// student, under RBAC, and shows in the tracer as theirs; impersonation
// is the API's, decided by RBAC; etcdctl is refused; a browser that has
// not joined gets no terminal, and no page of another site gets one.
func TestHostileClassroom(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.SecureListen = "127.0.0.1:0"
		c.JoinCode = "k8s-101"
		c.TerminalProcesses = true // kubelab's default
	})
	join := func(name string) http.Header {
		jar, _ := cookiejar.New(nil)
		b := &http.Client{Jar: jar}
		req, _ := http.NewRequest("POST", lab.URL()+"/signin", strings.NewReader(url.Values{"name": {name}, "code": {"k8s-101"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("join %s: %d", name, resp.StatusCode)
		}
		u, _ := url.Parse(lab.URL())
		var cookies []string
		for _, c := range jar.Cookies(u) {
			cookies = append(cookies, c.Name+"="+c.Value)
		}
		return http.Header{"Cookie": {strings.Join(cookies, "; ")}}
	}

	t.Run("ErrAnonymous", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(lab.URL(), "http")+terminal.WebsocketPath, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {lab.URL()}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an anonymous terminal: %v %v", err, resp)
		}
	})
	ada := join("Ada")
	t.Run("ErrForeignOrigin", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h := ada.Clone()
		h.Set("Origin", "http://evil.example")
		_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(lab.URL(), "http")+terminal.WebsocketPath, &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a page of another site got a terminal: %v %v", err, resp)
		}
	})

	join("Bob")
	tm := open(t, lab, ada)
	if tm.Hello.User != "ada" || tm.Hello.NS != "ada" || *tm.Hello.Etcd {
		t.Fatalf("hello %+v", tm.Hello)
	}
	t.Run("OKAsTheStudentInTheTracer", func(t *testing.T) {
		if r := tm.run("kubectl create configmap traced --from-literal=k=v", ""); r.Code != 0 {
			t.Fatalf("%+v", r)
		}
		var found bool
		for _, tr := range lab.Traces().Recent("ada", 100) {
			if tr.Verb == "create" && tr.Resource == "configmaps" && tr.Namespace == "ada" && tr.Code == http.StatusCreated {
				found = len(tr.Records) > 0
			}
		}
		if !found {
			b, _ := json.Marshal(lab.Traces().Recent("ada", 100))
			t.Fatalf("the create is not in ada's traces: %.2000s", b)
		}
	})
	t.Run("ErrAnotherStudentsNamespace", func(t *testing.T) {
		refused(t, tm, "kubectl get pods -n bob", `User "ada" cannot list resource "pods" in API group "" in the namespace "bob"`)
		refused(t, tm, "kubectl delete pod ssa-demo -n bob", "Forbidden")
	})
	t.Run("ErrImpersonationRBACDenies", func(t *testing.T) {
		// kubectl's discovery reports a refused impersonation as
		// "Forbidden: unknown", as it does against kube-apiserver; --raw
		// shows the server's own message.
		refused(t, tm, "kubectl get pods -n bob --as=bob", "Error from server (Forbidden)")
		refused(t, tm, "kubectl get --raw /api/v1/namespaces/bob/pods --as=bob", `User "ada" cannot impersonate resource "users"`)
		refused(t, tm, "kubectl get --raw /api/v1/secrets --as=kubelab-admin --as-group=system:masters", "cannot impersonate")
	})
	t.Run("ErrSignedOutEndsTheTerminal", func(t *testing.T) {
		// Signed out in another tab: the watch in this one ends, with
		// the reason, and the terminal closes.
		cy := join("Cy")
		watching := open(t, lab, cy)
		watching.send(map[string]any{"t": "run", "line": "kubectl create configmap till-signout && kubectl get configmaps -w"})
		watching.until("\ntill-signout ", time.Minute) // the watch has listed
		req, _ := http.NewRequest("POST", lab.URL()+"/signout", nil)
		req.Header.Set("Cookie", cy.Get("Cookie"))
		req.Header.Set("Origin", lab.URL())
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-out: %v %v", err, resp)
		}
		resp.Body.Close()
		watching.until("you have signed out, so this terminal has stopped", time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// The watch's exit, then the close.
		var closed error
		for closed == nil {
			_, _, closed = watching.conn.Read(ctx)
		}
		if websocket.CloseStatus(closed) != websocket.StatusNormalClosure {
			t.Errorf("after the sign-out, the terminal's websocket: %v", closed)
		}
	})
	t.Run("ErrEtcdctl", func(t *testing.T) {
		refused(t, tm, "etcdctl get /registry/ --prefix --keys-only", "etcd inspector")
		// In a pipe too: a student's command has no way to etcd at all.
		refused(t, tm, "echo | etcdctl get /registry/ --prefix --keys-only", "etcd inspector")
	})
}

func TestHostileCaps(t *testing.T) {
	t.Parallel()
	// The run-time cap has a terminal of its own: at 3 s it would also end
	// the other caps' commands on a loaded machine, before they meet the
	// cap they test (a watch that has not printed yet, a yaml not yet 4 KiB).
	lab := startTerminal(t, func(c *terminal.Config) {
		c.Limits = terminal.Limits{Commands: 1, Output: 4 << 10, RunTime: 5 * time.Minute, Stdin: 1 << 10}
	})
	brief := startTerminal(t, func(c *terminal.Config) {
		c.Limits = terminal.Limits{Commands: 1, Output: 4 << 10, RunTime: 3 * time.Second, Stdin: 1 << 10}
	})

	t.Run("ErrOutput", func(t *testing.T) {
		tm := open(t, lab, nil)
		r := tm.run("kubectl get pods -o yaml", "")
		if r.Code == 0 || !strings.Contains(r.Err, "wrote more than 4 KiB") || len(r.Out) > 4<<10 {
			t.Fatalf("code %d, %d bytes out, err %q", r.Code, len(r.Out), r.Err)
		}
	})
	t.Run("ErrRunTime", func(t *testing.T) {
		tm := open(t, brief, nil)
		start := time.Now()
		r := tm.run("kubectl get pods -w", "")
		if r.Code == 0 || !strings.Contains(r.Err, "at most 3s") || time.Since(start) > 30*time.Second {
			t.Fatalf("%+v after %v", r, time.Since(start))
		}
	})
	t.Run("ErrConcurrentCommands", func(t *testing.T) {
		refusedBesideAWatch(t, lab, "already have 1 commands running")
	})
	t.Run("ErrClassWideCommands", func(t *testing.T) {
		// Each running command may be a process of about 66 MiB, so the
		// server runs at most Total of them, whoever asks.
		busy := startTerminal(t, func(c *terminal.Config) {
			c.Limits = terminal.Limits{Commands: 2, Total: 1, Output: 4 << 10, RunTime: 5 * time.Minute, Stdin: 1 << 10}
		})
		refusedBesideAWatch(t, busy, "the server is running 1 commands for the class right now")
	})
	t.Run("ErrStdin", func(t *testing.T) {
		tm := open(t, lab, nil)
		r := tm.run("kubectl apply -f -", strings.Repeat("#", 2<<10))
		if r.Code == 0 || !strings.Contains(r.Err, "more than 1 KiB") {
			t.Fatalf("%+v", r)
		}
	})
}

// TestHostileCompletionFlood sends the Tabs of a script, 200,000 on one
// socket as fast as it writes, and counts the goroutines the server holds
// meanwhile: each Tab used to start one before any cap (122,000 of them,
// 800 MB). It runs alone, so that no other test's goroutines are counted.
func TestHostileCompletionFlood(t *testing.T) {
	lab := startTerminal(t)
	tm := open(t, lab, nil)
	if items := tm.complete("kubectl get po"); !contains(items, "pods") {
		t.Fatalf("a Tab before the flood: %q", items)
	}
	runtime.GC()
	base, baseHeap := runtime.NumGoroutine(), heapBytes()

	// The answers are read as they come, or the server's writes would
	// wait on the test; the reading ends at the exit of the command sent
	// after the flood, or 60 s after the flood began.
	answers := make(chan int, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		n := 0
		for {
			_, b, err := tm.conn.Read(ctx)
			if err != nil {
				answers <- -1
				return
			}
			if strings.Contains(string(b), `"t":"comp"`) {
				n++
			}
			if strings.Contains(string(b), `"t":"exit"`) {
				answers <- n
				return
			}
		}
	}()
	var peak atomic.Int64
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-sampling:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	const tabs = 200_000
	msg := []byte(`{"t":"complete","id":1,"line":"kubectl get po"}`)
	for i := 0; i < tabs; i++ {
		if err := tm.conn.Write(context.Background(), websocket.MessageText, msg); err != nil {
			t.Fatalf("after %d Tabs: %v", i, err)
		}
	}
	close(sampling)
	<-sampled
	runtime.GC()
	grown, heapGrown := int(peak.Load())-base, int64(heapBytes())-int64(baseHeap)
	t.Logf("%d Tabs: at most %d goroutines more than before (%d); heap held after a GC %+.1f MiB", tabs, grown, base, float64(heapGrown)/(1<<20))
	// A few per completion in flight (kubectl's, the router's), never
	// one per Tab.
	if grown > 500 {
		t.Errorf("%d Tabs held up to %d goroutines more than before", tabs, grown)
	}

	// The socket still works: a command after the flood runs and exits.
	tm.send(map[string]any{"t": "run", "line": "kubectl get pods -o name"})
	switch n := <-answers; {
	case n < 0:
		t.Fatal("no exit of the command sent after the flood")
	case n == 0 || n > tabs/10:
		t.Errorf("%d of %d Tabs were answered; want some, and the rest dropped", n, tabs)
	default:
		t.Logf("%d of %d Tabs answered, the rest dropped", n, tabs)
	}
	// Dropping is for Tabs sent while one is answered: a Tab sent as soon
	// as the last was answered, as a quick typist's, is always answered.
	tm2 := open(t, lab, nil)
	for i := range 30 {
		if items := tm2.complete("kubectl get po"); !contains(items, "pods") {
			t.Fatalf("Tab %d after the flood, each sent once the last was answered: %q", i+1, items)
		}
	}
}

func heapBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// refusedBesideAWatch runs a watch in one tab of lab's terminal, then a
// command in another, which must be refused saying want; Ctrl-C on the
// watch gives the place back.
func refusedBesideAWatch(t *testing.T, lab served, want string) {
	t.Helper()
	first, second := open(t, lab, nil), open(t, lab, nil)
	first.send(map[string]any{"t": "run", "line": "kubectl get pods -w"})
	first.until("ssa-demo", 20*time.Second)
	if r := second.run("kubectl get pods", ""); r.Code == 0 || !strings.Contains(r.Err, want) {
		t.Fatalf("a command beside the watch: %+v, want refused saying %q", r, want)
	}
	first.send(map[string]any{"t": "int"})
	if r := first.wait(20 * time.Second); r.Code != 130 || !strings.Contains(r.Err, "^C") {
		t.Fatalf("after Ctrl-C: %+v", r)
	}
	if r := second.run("kubectl get pods -o name", ""); r.Code != 0 {
		t.Fatalf("once the watch stopped: %+v", r)
	}
}
