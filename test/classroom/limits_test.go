package classroom_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/webclient"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/client-go/rest"
)

// limitsClass is a class whose in-flight caps are the fixed ones the
// tests count up to.
func limitsClass(t *testing.T) *class {
	t.Helper()
	return startClass(t, "--adaptive-inflight-limit=false")
}

// dialAPI opens a raw TLS connection to the HTTPS port, as kubectl's would be.
func dialAPI(t *testing.T, s *student) net.Conn {
	t.Helper()
	cfg, err := rest.TLSConfigFor(s.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	u, _ := url.Parse(s.config.Host)
	conn, err := tls.Dial("tcp", u.Host, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

const stalledBody = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"stalled-"}}`

// stalledCreate sends a create's headers and half its body, and no more:
// the server serves it (and holds its slots) until the body comes.
func stalledCreate(t *testing.T, s *student, query string) net.Conn {
	t.Helper()
	conn := dialAPI(t, s)
	body := stalledBody
	fmt.Fprintf(conn, "POST /api/v1/namespaces/%s/configmaps%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		s.name, query, s.config.BearerToken, len(body), body[:10])
	return conn
}

// Finding: a request with an Upgrade: websocket header, or ?watch=1 in
// its query, skipped the in-flight caps. With the student's 50 slots
// held, an ordinary list with the header, and a create with the query,
// are refused like any other request of theirs.
func TestLimitsUpgradeHeaderAndWatchQueryAreCounted(t *testing.T) {
	t.Parallel()
	srv := limitsClass(t)
	alice, bob := join(t, srv.URL(), "Alice"), join(t, srv.URL(), "Bob")
	list := "/api/v1/namespaces/" + alice.name + "/configmaps"
	const perUser = 50 // server.MaxUserInflight
	for range perUser {
		stalledCreate(t, alice, "")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, _ := alice.apiDo(t, "GET", list)
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's %d stalled creates never filled her share: a list is %d", perUser, resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	upgrade := []string{"Upgrade", "websocket", "Connection", "Upgrade", "Sec-Websocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-Websocket-Version", "13"}
	if resp, body := alice.apiDo(t, "GET", list, upgrade...); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a list with Upgrade: websocket while alice's share is full: %d %s", resp.StatusCode, body)
	}
	if resp, body := alice.apiDo(t, "GET", list+"?watch=False"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a list with watch=False (a list, in kube too) while alice's share is full: %d %s", resp.StatusCode, body)
	}
	// A create with ?watch=1 is refused, not created. (Go's server reads
	// an unread body before it answers, so the body is sent in full.)
	conn := stalledCreate(t, alice, "?watch=1")
	io.WriteString(conn, stalledBody[10:])
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a create with ?watch=1: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a create with ?watch=1 while alice's share is full: %d, want 429", resp.StatusCode)
	}
	if resp, body := bob.apiDo(t, "GET", "/api/v1/namespaces/"+bob.name+"/configmaps"); resp.StatusCode != http.StatusOK {
		t.Errorf("bob is held back by alice's requests: %d %s", resp.StatusCode, body)
	}
}

// Finding: a student could hold unlimited watches. The 51st is refused
// with 429 and says which cap, whatever service account it acts as.
func TestLimitsFiftyFirstWatchIsRefused(t *testing.T) {
	t.Parallel()
	srv := limitsClass(t)
	alice := join(t, srv.URL(), "Alice")
	const maxWatches = 50 // server.MaxUserWatches
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := func(header http.Header) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", alice.config.Host+"/api/v1/namespaces/"+alice.name+"/configmaps?watch=1", nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := alice.api.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range maxWatches {
		resp := watch(nil)
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("watch %d: %d %s", i+1, resp.StatusCode, body)
		}
		defer resp.Body.Close()
	}
	want := fmt.Sprintf("too many watches open: at most %d per user (%s)", maxWatches, alice.name)
	for _, as := range []http.Header{nil, {"Impersonate-User": {"system:serviceaccount:" + alice.name + ":default"}}} {
		resp := watch(as)
		if resp.StatusCode == http.StatusOK {
			// An open watch: its body would never end.
			defer resp.Body.Close()
			t.Errorf("watch %d (as %v) was let through", maxWatches+1, as)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), want) {
			t.Errorf("watch %d (as %v): %d %s", maxWatches+1, as, resp.StatusCode, body)
		}
	}
}

// Finding: the listeners had no header timeout, so a connection whose
// headers never end (slowloris) stayed open for ever. Both ports now
// close it after the header timeout (10s).
func TestLimitsSlowlorisIsClosedAfterTheHeaderTimeout(t *testing.T) {
	t.Parallel()
	srv := limitsClass(t)
	alice := join(t, srv.URL(), "Alice")
	const headerTimeout = 10 * time.Second // server.ReadHeaderTimeout
	plain, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	conns := map[string]net.Conn{"plain HTTP": plain, "HTTPS": dialAPI(t, alice)}
	start := time.Now()
	for _, c := range conns {
		fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n") // and never the blank line
	}
	for name, c := range conns {
		c.SetReadDeadline(start.Add(headerTimeout + 10*time.Second))
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: a half-sent request still open after %v", name, time.Since(start).Round(time.Second))
		}
	}
	if d := time.Since(start); d < headerTimeout-time.Second {
		t.Errorf("closed after %v, before the header timeout", d)
	}
}

// Finding: a student could write 1 MiB objects until etcd's space quota
// stopped every write in the class. Their namespace's ResourceQuota stops
// them at kubelab.io/stored-bytes with kube's message, and kubectl
// describe quota shows used against hard.
func TestLimitsQuotaStopsAStudentFillingEtcd(t *testing.T) {
	t.Parallel()
	srv := limitsClass(t)
	alice := join(t, srv.URL(), "Alice")
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, []byte(strings.Repeat("x", 900<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	var refusal string
	for i := range 40 {
		_, stderr, err := alice.kubectl(t, "create", "configmap", fmt.Sprintf("big-%d", i), "--from-file=data="+file)
		if err != nil {
			refusal = stderr
			break
		}
	}
	for _, want := range []string{`configmaps "big-`, `is forbidden: exceeded quota: kubelab-student, requested: kubelab.io/stored-bytes=`, `limited: kubelab.io/stored-bytes=16Mi`} {
		if !strings.Contains(refusal, want) {
			t.Fatalf("filling the namespace with 900 KiB ConfigMaps: want %q in the refusal, got %q", want, refusal)
		}
	}
	out, stderr, err := alice.kubectl(t, "describe", "quota", "kubelab-student")
	if err != nil {
		t.Fatalf("kubectl describe quota: %v %s", err, stderr)
	}
	for _, want := range []string{"Resource", "Used", "Hard", "kubelab.io/stored-bytes", "16Mi", "count/configmaps"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe quota lacks %q:\n%s", want, out)
		}
	}
	// The student may read their quota, not raise it.
	if _, stderr, err := alice.kubectl(t, "delete", "quota", "kubelab-student"); err == nil || !strings.Contains(stderr, "forbidden") {
		t.Errorf("a student deleted their own quota: %v %s", err, stderr)
	}
	t.Logf("%s", out)
}

// Finding: a student could open unlimited lab websockets (the labs' were
// not counted at all, the live views' per impersonated name). The live
// views and the labs now share one cap per authenticated user.
func TestLimitsEleventhWebsocketIsRefused(t *testing.T) {
	t.Parallel()
	srv := limitsClass(t)
	alice := join(t, srv.URL(), "Alice")
	const maxWebsockets = 10 // server.MaxUserWebsockets
	dial := func(path string, header http.Header) (*websocket.Conn, *http.Response, error) {
		h := http.Header{"Origin": {srv.URL()}, "Cookie": {alice.cookie()}}
		for k, v := range header {
			h[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return websocket.Dial(ctx, "ws://"+srv.Addr+path, &websocket.DialOptions{HTTPHeader: h})
	}
	for i := range maxWebsockets {
		path := "/ui/ws/trace"
		if i%2 == 1 {
			path = "/kubelab/v1/labs/ws?lab=watch"
		}
		c, _, err := dial(path, nil)
		if err != nil {
			t.Fatalf("websocket %d (%s): %v", i+1, path, err)
		}
		defer c.CloseNow()
	}
	as := http.Header{"Impersonate-User": {"system:serviceaccount:" + alice.name + ":default"}}
	for _, path := range []string{"/ui/ws/trace", "/kubelab/v1/labs/ws?lab=watch"} {
		for _, h := range []http.Header{nil, as} {
			c, resp, err := dial(path, h)
			if err == nil {
				c.CloseNow()
				t.Errorf("websocket %d (%s, %v) was let through", maxWebsockets+1, path, h)
				continue
			}
			// Impersonating is refused on kubelab's own endpoints before
			// any cap is counted (TestEndpointsRefuseImpersonation); either
			// way, no name a student acts as brings more websockets.
			want := http.StatusTooManyRequests
			if h != nil {
				want = http.StatusForbidden
			}
			if resp == nil || resp.StatusCode != want {
				t.Errorf("websocket %d (%s, %v): %v %+v, want %d", maxWebsockets+1, path, h, err, resp, want)
			}
		}
	}
}

// Finding: a body sent slowly held its in-flight place for as long as
// its sender liked. A student's create whose body stops coming ends at
// the request timeout with kube's 504, and nothing is written.
func TestLimitsStalledBodyEndsAtTheRequestTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	srv := startClass(t, "--request-timeout", timeout.String())
	alice := join(t, srv.URL(), "Alice")
	cfg, err := rest.TLSConfigFor(alice.config)
	if err != nil {
		t.Fatal(err)
	}
	// A server that waited on the body for ever fails the test, with a
	// message, rather than holding it until the suite's time limit.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 6 * timeout}
	body, stall := io.Pipe()
	t.Cleanup(func() { stall.Close() })
	go io.WriteString(stall, stalledBody[:10]) // and nothing more
	req, _ := http.NewRequest("POST", alice.config.Host+"/api/v1/namespaces/"+alice.name+"/configmaps", body)
	req.Header.Set("Authorization", "Bearer "+alice.config.BearerToken)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("a create whose body stalls: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	t.Logf("a stalled create was answered %d after %s (request timeout %s)", resp.StatusCode, took.Round(100*time.Millisecond), timeout)
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("a create whose body stalls: %d %s, want 504", resp.StatusCode, got)
	}
	if took < timeout {
		t.Errorf("answered after %s, before the request timeout (%s)", took, timeout)
	}
	if out := clitest.KubectlWithOK(t, alice.kubeconfig, "get", "configmaps", "-o", "name"); strings.Contains(out, "stalled-") {
		t.Errorf("the stalled create was written:\n%s", out)
	}
}

// rssBytes is a process's resident memory, from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kib)
			return kib << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// etcdFileBytes is the size of the class's etcd database file.
func etcdFileBytes(t *testing.T, c *class) int64 {
	t.Helper()
	var size int64
	filepath.WalkDir(c.DataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "db" && filepath.Base(filepath.Dir(path)) == "snap" {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	if size == 0 {
		t.Fatalf("no etcd database under %s", c.DataDir)
	}
	return size
}

// Finding: the quota bounds what a namespace holds, not how often it is
// rewritten. Twelve loops rewriting one 1 MiB ConfigMap grew etcd by
// 262 MB and kubelab by 1 GB in minutes; each revision stays until the
// next compaction, and etcd's space quota, once reached, stops every
// write in the class. Now a student writes at most WriteBurstBytes at
// once and WriteBytesPerSecond after: past it, kube's 429 with the
// seconds to wait. A small patch that rewrites the big object pays for
// the object, and so does one that asks for the object's metadata alone
// in the answer (a few hundred bytes). Another student writes on.
func TestLimitsRewritingABigObjectIsThrottled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, accept string }{
		{"TheObjectAnswered", "application/json"},
		{"ItsMetadataAnswered", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rewriteABigObject(t, tc.accept)
		})
	}
}

// rewriteABigObject has twelve loops rewrite a student's 900 KiB
// ConfigMap, each patch asking for an answer of accept, and checks that
// the write budget refuses most of them.
func rewriteABigObject(t *testing.T, accept string) {
	srv := limitsClass(t)
	alice, bob := join(t, srv.URL(), "Alice"), join(t, srv.URL(), "Bob")
	data := strings.Repeat("x", 900<<10)
	clitest.KubectlWithOK(t, alice.kubeconfig, "create", "configmap", "big", "--from-literal=data="+data[:1])
	rssBefore, dbBefore := rssBytes(t, srv.Pid()), etcdFileBytes(t, srv)

	// The object grows to 900 KiB once (a replace), then twelve loops
	// rewrite it with one-line merge patches, without client-go's
	// retries, so that each refusal is seen.
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"data":%q}}`, data)
	path := "/api/v1/namespaces/" + alice.name + "/configmaps/big"
	if resp, body := sendAs(t, alice, "PUT", path, cm, "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("growing the ConfigMap: %d %.300s", resp.StatusCode, body)
	}
	const loops, each = 12, 10
	type result struct {
		code       int
		retryAfter string
		body       string
	}
	results := make(chan result, loops*each)
	start := time.Now()
	for l := range loops {
		go func() {
			for i := range each {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"rewrite":"%d-%d"}}}`, l, i)
				resp, body := webclient.Send(t, alice.api, "PATCH", alice.config.Host+path, patch,
					"Content-Type", "application/merge-patch+json", "Accept", accept)
				results <- result{resp.StatusCode, resp.Header.Get("Retry-After"), body}
			}
		}()
	}
	accepted, refused, conflicts := 0, 0, 0
	for range loops * each {
		r := <-results
		switch {
		case r.code == http.StatusOK:
			accepted++
		case r.code == http.StatusForbidden && strings.Contains(r.body, "status unknown for quota"):
			// Twelve writers at once race for the quota's count, and a
			// write that loses too often is refused, as in kube.
			conflicts++
		case r.code == http.StatusTooManyRequests:
			refused++
			if !strings.Contains(r.body, "too many bytes written") || r.retryAfter == "" || r.retryAfter == "0" {
				t.Errorf("a refused rewrite: Retry-After %q, %.300s", r.retryAfter, r.body)
			}
		default:
			t.Errorf("a rewrite: %d %.300s", r.code, r.body)
		}
	}
	took := time.Since(start)
	rssAfter, dbAfter := rssBytes(t, srv.Pid()), etcdFileBytes(t, srv)
	t.Logf("%d rewrites of a 900 KiB ConfigMap in %s: %d accepted, %d refused for the budget, %d for the quota's race; kubelab's RSS %d → %d MiB, etcd's file %d → %d MiB",
		loops*each, took.Round(100*time.Millisecond), accepted, refused, conflicts, rssBefore>>20, rssAfter>>20, dbBefore>>20, dbAfter>>20)
	// The budget lets through the burst (16 MiB: 18 rewrites and the one
	// that overdraws it) and what the rate adds while the loops run; the
	// twelve in flight when it runs out are let through and paid for
	// after. A budget that did nothing would accept about all 120.
	allowed := (16<<20+int(took.Seconds()+1)*(64<<10))/(900<<10) + 1 + loops
	if accepted > allowed || refused == 0 {
		t.Errorf("%d of %d rewrites accepted in %s, want at most %d", accepted, loops*each, took, allowed)
	}
	// Another student's budget is their own.
	if out, stderr, err := bob.kubectl(t, "create", "configmap", "small", "--from-literal=a=b"); err != nil {
		t.Errorf("bob is held back by alice's rewrites: %v %s%s", err, out, stderr)
	}
}

// sendAs sends a request to the API with the student's token, as kubectl
// does, with body of the content type.
func sendAs(t *testing.T, s *student, method, path, body, contentType string) (*http.Response, string) {
	t.Helper()
	return webclient.Send(t, s.api, method, s.config.Host+path, body, "Content-Type", contentType)
}

// A dry run stores nothing, so it is not charged to the write budget:
// twenty server-side dry runs of a 900 KiB ConfigMap (18 MiB, past the
// 16 MiB burst) leave the student's real writes unrefused.
func TestLimitsDryRunsCostNoWriteBudget(t *testing.T) {
	t.Parallel()
	srv := limitsClass(t)
	alice := join(t, srv.URL(), "Alice")
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"},"data":{"data":%q}}`, strings.Repeat("x", 900<<10))
	path := "/api/v1/namespaces/" + alice.name + "/configmaps"
	for i := range 20 {
		if resp, body := sendAs(t, alice, "POST", path+"?dryRun=All", cm, "application/json"); resp.StatusCode != http.StatusCreated {
			t.Fatalf("dry run %d: %d %.300s", i+1, resp.StatusCode, body)
		}
	}
	if resp, body := sendAs(t, alice, "POST", path, cm, "application/json"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a real create after 18 MiB of dry runs: %d %.300s", resp.StatusCode, body)
	}
}
