package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/webui"
)

type msg struct {
	T        string                  `json:"t"`
	Type     string                  `json:"type"`
	Name     string                  `json:"name"`
	RV       int64                   `json:"rv"`
	Relist   bool                    `json:"relist"`
	Line     string                  `json:"line"`
	Text     string                  `json:"text"`
	Code     int                     `json:"code"`
	Message  string                  `json:"message"`
	Status   string                  `json:"status"`
	Headers  map[string]string       `json:"headers"`
	Request  string                  `json:"request"`
	Streamed bool                    `json:"streamed"`
	Items    []struct{ Name string } `json:"items"`
	// The timeline's clock and horizons.
	WindowStart    int64 `json:"windowStart"`
	WindowCapacity int   `json:"windowCapacity"`
	Compacted      int64 `json:"compacted"`
	Trace          *struct {
		Verb     string        `json:"verb"`
		Path     string        `json:"path"`
		Source   string        `json:"source"`
		Code     int           `json:"code"`
		Duration time.Duration `json:"duration"`
		Records  []struct {
			Stage    string        `json:"stage"`
			Decision string        `json:"decision"`
			Duration time.Duration `json:"duration"`
		} `json:"records"`
	} `json:"trace"`
}

func wsURL(lab served, path string) string {
	return "ws" + strings.TrimPrefix(lab.URL(), "http") + path
}

func dial(t *testing.T, lab served, path string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(lab, path), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {lab.URL()}}})
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// next reads messages until one satisfies ok, failing after timeout.
func next(t *testing.T, c *websocket.Conn, timeout time.Duration, ok func(msg) bool) msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		var m msg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("bad message %s: %v", b, err)
		}
		if ok(m) {
			return m
		}
	}
}

func apiDo(t *testing.T, lab served, method, path, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, lab.URL()+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func label(t *testing.T, lab served, value string) {
	t.Helper()
	code, body := apiDo(t, lab, "PATCH", "/api/v1/namespaces/internals-demo/pods/ssa-demo", "application/merge-patch+json",
		`{"metadata":{"labels":{"demo-round":"`+value+`"}}}`)
	if code != 200 {
		t.Fatalf("label: %d %s", code, body)
	}
}

// testPages: the web UI's own pages, in either language, with its
// headers; its live views refuse a foreign page, and the front door a
// foreign page's POST.
func testPages(t *testing.T, lab *apitest.Server) {
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	get := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", lab.URL()+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	t.Run("OK lesson in English", func(t *testing.T) {
		resp, body := get("/")
		if resp.StatusCode != 200 || !strings.Contains(body, `<html lang="en">`) || !strings.Contains(body, "The request path") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP %q", csp)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, `="http://`) || strings.Contains(body, "https://fonts") {
			t.Error("the page has inline script or style, or refers to another host")
		}
		if !strings.Contains(body, `href="/quiz"`) {
			t.Error("no quiz entry point")
		}
	})
	t.Run("OK language switch is remembered", func(t *testing.T) {
		resp, body := get("/lang?to=th", "Referer", lab.URL()+"/lesson/gone")
		if resp.Request.URL.Path != "/lesson/gone" || !strings.Contains(body, `<html lang="th">`) || !strings.Contains(body, "พร้อมข้อความจริง") {
			t.Fatalf("after the switch: %s %.300s", resp.Request.URL, body)
		}
		_, body = get("/lesson/etcd")
		if !strings.Contains(body, `<html lang="th">`) {
			t.Fatal("the language was not remembered")
		}
		get("/lang?to=en")
	})
	t.Run("OK Accept-Language", func(t *testing.T) {
		jar2, _ := cookiejar.New(nil)
		req, _ := http.NewRequest("GET", lab.URL()+"/lesson/gone", nil)
		req.Header.Set("Accept-Language", "th-TH,th;q=0.9,en;q=0.8")
		resp, err := (&http.Client{Jar: jar2}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `<html lang="th">`) {
			t.Fatal("Thai reader got English")
		}
	})
	t.Run("OK static", func(t *testing.T) {
		resp, body := get("/static/js/main.js?v=x")
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || !strings.Contains(body, "initTimeline") {
			t.Fatalf("%d %v", resp.StatusCode, resp.Header)
		}
	})
	t.Run("ErrNotFound is a page", func(t *testing.T) {
		for _, p := range []string{"/lesson/nope", "/static/nope.js", "/lesson/%3Cscript%3E"} {
			resp, body := get(p)
			if resp.StatusCode != 404 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `href="/lesson/"`) {
				t.Errorf("%s: %d %s %.200s", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if strings.Contains(body, "<script>") {
				t.Errorf("%s: unescaped", p)
			}
		}
	})
	t.Run("ErrForeignOrigin", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, wsURL(lab, "/ui/ws/trace"), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a foreign page connected: %v %v", err, resp)
		}
	})
	t.Run("ErrForeignOrigin", func(t *testing.T) {
		req, _ := http.NewRequest("POST", lab.URL()+"/ui/compact", nil)
		req.Header.Set("Origin", "http://evil.example")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin compact: %d", r.StatusCode)
		}
	})
}

// testPagesWithTheServer: what the whole server adds to the web UI's
// pages: the quiz, another package's page, in the same layout.
func testPagesWithTheServer(t *testing.T, lab *kubelabtest.Lab) {
	t.Run("OK the quiz wears the site's layout", func(t *testing.T) {
		resp, err := http.Get(lab.URL() + "/quiz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body := string(b); resp.StatusCode != 200 || !strings.Contains(body, `class="topbar"`) || !strings.Contains(body, `<a href="/quiz" aria-current="page">`) {
			t.Fatalf("%d %.400s", resp.StatusCode, body)
		}
	})
}

func TestRunLive(t *testing.T) {
	t.Parallel()
	// An API of its own: it labels the seeded pod, expects the next change
	// on its watch to be its own, and compares a list's resourceVersion,
	// etcd's revision, with the one Run it live read just before.
	lab := startAPI(t)
	t.Run("OK label", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=label-pod&value=two")
		// kubectl label reads the pod, then patches what changed.
		get := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "request" })
		if get.Line != "GET /api/v1/namespaces/internals-demo/pods/ssa-demo HTTP/1.1" {
			t.Fatalf("request %+v", get)
		}
		req := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "request" })
		if req.Line != "PATCH /api/v1/namespaces/internals-demo/pods/ssa-demo?fieldManager=kubectl-label HTTP/1.1" || req.Headers["Content-Type"] != "application/merge-patch+json" {
			t.Fatalf("request %+v", req)
		}
		resp := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "response" })
		if resp.Code != 200 || resp.Headers["Audit-Id"] == "" {
			t.Fatalf("response %+v", resp)
		}
		if l := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" }); l.Text != "pod/ssa-demo labeled" {
			t.Fatalf("line %+v", l)
		}
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "end" })
		_, body := apiDo(t, lab, "GET", "/api/v1/namespaces/internals-demo/pods/ssa-demo", "", "")
		if !strings.Contains(body, `"demo-round":"two"`) {
			t.Fatalf("the label was not written: %s", body)
		}
	})
	t.Run("OK list resourceVersion", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=list-rv")
		l := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" })
		_, body := apiDo(t, lab, "GET", "/api/v1/namespaces/internals-demo/pods", "", "")
		if l.Text == "" || !strings.Contains(body, `"resourceVersion":"`+l.Text+`"`) {
			t.Fatalf("rv %q, list %.200s", l.Text, body)
		}
	})
	t.Run("OK watch, as kubectl get --watch --output-watch-events prints it", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=watch-pods")
		if l := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" }); !strings.HasPrefix(l.Text, "EVENT") || !strings.Contains(l.Text, "NAME") {
			t.Fatalf("header %q", l.Text)
		}
		next(t, c, 10*time.Second, func(m msg) bool {
			return m.T == "line" && strings.HasPrefix(m.Text, "ADDED ") && strings.Contains(m.Text, " ssa-demo ")
		})
		// The watch starts once the list is shown; a change then arrives on it.
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "request" && strings.HasSuffix(m.Line, "&watch=true HTTP/1.1") })
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "response" })
		label(t, lab, "watched")
		l := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" && m.Type != "" })
		if l.Type != "MODIFIED" || !strings.HasPrefix(l.Text, "MODIFIED ") || !strings.Contains(l.Text, "ssa-demo") {
			t.Fatalf("event line %+v", l)
		}
	})
	t.Run("OK table", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=list-table")
		l := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" })
		if !strings.HasPrefix(l.Text, "NAME") {
			t.Fatalf("header %q", l.Text)
		}
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" && strings.HasPrefix(m.Text, "ssa-demo ") })
	})
	t.Run("OK the raw response apart from what the command prints", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=list-table")
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "body" && strings.Contains(m.Text, `"kind": "Table"`) })
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" && strings.HasPrefix(m.Text, "NAME") })
	})
	t.Run("ErrInvalidLabel is the API's Status", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=label-pod&value="+"%3Cimg%20src%3Dx%3E")
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "request" && strings.HasPrefix(m.Line, "PATCH ") })
		resp := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "response" })
		if resp.Code != 422 {
			t.Fatalf("response %+v", resp)
		}
		// The failure leads, with its Status's message; the raw Status follows.
		failed := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "failed" })
		if failed.Status != "422 Unprocessable Entity" || !strings.Contains(failed.Message, "<img src=x>") {
			t.Fatalf("failed %+v", failed)
		}
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "body" && strings.Contains(m.Text, "<img src=x>") })
	})
	t.Run("OK etcdctl get", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=etcd-get")
		req := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "request" })
		if req.Line != "etcd Range /registry/pods/internals-demo/ssa-demo" {
			t.Fatalf("request %+v", req)
		}
		key := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" })
		value := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" })
		if key.Text != "/registry/pods/internals-demo/ssa-demo" || !strings.HasPrefix(value.Text, `k8s\x00`) {
			t.Fatalf("key %q value %q", key.Text, value.Text)
		}
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "line" && strings.Contains(m.Text, "manager-a") })
	})
	t.Run("ErrUnknownCommand", func(t *testing.T) {
		c := dial(t, lab, "/ui/ws/run?cmd=rm-rf")
		next(t, c, 10*time.Second, func(m msg) bool { return m.T == "error" && m.Message == "no such command" })
	})
}

// TestStreamingListLane: a lane that starts as client-go 1.35+'s
// Reflector does, with a watch whose initial events are the state, ended
// by the initial-events-end bookmark, and its changes on the same watch.
func TestStreamingListLane(t *testing.T) {
	t.Parallel()
	// An API of its own: it labels the seeded pod and expects the next
	// change on the lane to be that one.
	lab := startAPI(t)
	b := dial(t, lab, "/ui/ws/watch?lane=B&mode=stream")
	w := next(t, b, 10*time.Second, func(m msg) bool { return m.T == "watching" || m.T == "list" })
	if w.T != "watching" || !strings.Contains(w.Request, "sendInitialEvents=true") {
		t.Fatalf("first message %+v, want the streaming watch", w)
	}
	list := next(t, b, 10*time.Second, func(m msg) bool { return m.T == "list" })
	if !list.Streamed || list.RV == 0 || !strings.Contains(list.Request, "sendInitialEvents=true") || !slices.ContainsFunc(list.Items, func(p struct{ Name string }) bool { return p.Name == "ssa-demo" }) {
		t.Fatalf("streamed list %+v", list)
	}
	label(t, lab, "streamed")
	if ev := next(t, b, 10*time.Second, func(m msg) bool { return m.T == "event" && m.Type != "BOOKMARK" }); ev.Type != "MODIFIED" || ev.RV <= list.RV {
		t.Fatalf("after the streamed list at %d: %+v", list.RV, ev)
	}
}

// postUI posts body to one of the web UI's endpoints, as the page does.
func postUI(t *testing.T, lab served, path, body string, out any) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", lab.URL()+path, strings.NewReader(body))
	req.Header.Set("Origin", lab.URL())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(b, out)
	}
	return resp.StatusCode, string(b)
}

// TestWatchTimeline follows the 410 exercise on kube's model: a paused
// watcher that missed a change can resume until that change is older
// than the window's freshness (kube's 75 s, 10 s here) and enough changes
// have pushed the window past it; then it gets "too old resource
// version" and relists. Compaction moves etcd's horizon, not the window.
// freshness is TestWatchTimeline's window freshness: short, so that the
// test does not wait kube's 75 s, and long enough that a change is still
// fresh when a loaded machine gets round to the push that checks it is.
const freshness = 10 * time.Second

func TestWatchTimeline(t *testing.T) {
	// A server of its own, as the window's freshness is shortened for it,
	// its push moves the pods' window under every watcher, and it expects
	// the window to stay put while it compacts. Side by side with the
	// others all the same: every step waits on an event or, for the push,
	// on the 409 that says how long to wait, not on a fixed time.
	t.Parallel()
	lab := startAPI(t, func(c *apitest.Config) { c.EventFreshDuration = freshness })
	a := dial(t, lab, "/ui/ws/watch?lane=A")
	list := next(t, a, 10*time.Second, func(m msg) bool { return m.T == "list" })
	if list.RV == 0 || list.Relist || list.WindowStart == 0 || list.WindowCapacity < 100 {
		t.Fatalf("list %+v", list)
	}
	next(t, a, 10*time.Second, func(m msg) bool { return m.T == "watching" })
	label(t, lab, "one")
	ev := next(t, a, 10*time.Second, func(m msg) bool { return m.T == "event" })
	if ev.Type != "MODIFIED" || ev.Name != "ssa-demo" || ev.RV <= list.RV {
		t.Fatalf("event %+v after list at %d", ev, list.RV)
	}
	paused := ev.RV // watcher B stops here

	// Nothing missed yet: the push says what to do first.
	var refusal struct {
		Message string
		Details struct{ RetryAfterSeconds int }
	}
	if code, body := postUI(t, lab, "/ui/window/push", `{"past":`+itoa(paused)+`}`, &refusal); code != http.StatusConflict || !strings.Contains(refusal.Message, "change the pod first") {
		t.Fatalf("push with nothing missed: %d %s", code, body)
	}
	// B misses a change; while it is fresh the window keeps it.
	label(t, lab, "two")
	next(t, a, 10*time.Second, func(m msg) bool { return m.T == "event" })
	if code, body := postUI(t, lab, "/ui/window/push", `{"past":`+itoa(paused)+`}`, &refusal); code != http.StatusConflict ||
		!strings.Contains(refusal.Message, "grows its window rather than drop it") ||
		refusal.Details.RetryAfterSeconds < 1 || refusal.Details.RetryAfterSeconds > int(freshness/time.Second) {
		t.Fatalf("push while fresh: %d %s", code, body)
	}
	// B can still resume while the window holds what it missed.
	early := dial(t, lab, "/ui/ws/watch?lane=B&rv="+itoa(paused))
	if m := next(t, early, 10*time.Second, func(m msg) bool { return m.T == "gone" || m.T == "event" }); m.T != "event" || m.Type != "MODIFIED" {
		t.Fatalf("resume inside the window: %+v", m)
	}
	early.CloseNow()

	var pushed struct {
		Changes     int
		WindowStart int64
		Passed      bool
		Details     struct{ RetryAfterSeconds int }
	}
	// Until what B missed is older than the freshness, the push says how
	// long to wait (409), as it tells the page: the test waits that long
	// and asks again, as the page's student would.
	pushed.Details.RetryAfterSeconds = refusal.Details.RetryAfterSeconds
	code, body := http.StatusConflict, ""
	for deadline := time.Now().Add(30 * time.Second); code == http.StatusConflict && time.Now().Before(deadline); {
		time.Sleep(time.Duration(max(pushed.Details.RetryAfterSeconds, 1)) * time.Second)
		code, body = postUI(t, lab, "/ui/window/push", `{"past":`+itoa(paused)+`}`, &pushed)
	}
	if code != 200 || !pushed.Passed || pushed.WindowStart <= paused || pushed.Changes < 1 {
		t.Fatalf("push: %d %s", code, body)
	}
	b := dial(t, lab, "/ui/ws/watch?lane=B&rv="+itoa(paused))
	gone := next(t, b, 10*time.Second, func(m msg) bool { return m.T == "gone" || m.T == "list" })
	want := "too old resource version: " + itoa(paused) + " ("
	if gone.T != "gone" || gone.Code != 410 || !strings.Contains(gone.Message, want) {
		t.Fatalf("got %+v, want 410 %q...", gone, want)
	}
	relist := next(t, b, 10*time.Second, func(m msg) bool { return m.T == "list" })
	if !relist.Relist || relist.RV <= paused {
		t.Fatalf("relist %+v", relist)
	}
	// Watchers that keep up are not disturbed. (This test did not read A
	// during the push, so A was closed as too slow, as a browser that
	// stops reading is; a new one starts from a list.)
	a = dial(t, lab, "/ui/ws/watch?lane=A")
	next(t, a, 10*time.Second, func(m msg) bool { return m.T == "watching" })
	label(t, lab, "three")
	next(t, a, 10*time.Second, func(m msg) bool { return m.T == "event" && m.Type == "MODIFIED" && m.Name == "ssa-demo" })
	next(t, b, 10*time.Second, func(m msg) bool { return m.T == "event" && m.Type == "MODIFIED" })

	// Compaction moves etcd's horizon; a watch from inside the window but
	// below the compacted revision is still served from the cache. (The
	// window is read just before, with no change in between: changes, not
	// compaction, move it.)
	before := next(t, a, 10*time.Second, func(m msg) bool { return m.T == "clock" })
	var compacted struct{ Revision int64 }
	if code, body := postUI(t, lab, "/ui/compact", "", &compacted); code != 200 || compacted.Revision <= pushed.WindowStart {
		t.Fatalf("compact: %d %s", code, body)
	}
	clock := next(t, a, 10*time.Second, func(m msg) bool { return m.T == "clock" && m.Compacted >= compacted.Revision })
	if clock.WindowStart != before.WindowStart {
		t.Fatalf("compaction moved the window: from %d to %d", before.WindowStart, clock.WindowStart)
	}
	below := compacted.Revision - 1 // etcd no longer has it; the window does
	c := dial(t, lab, "/ui/ws/watch?lane=B&rv="+itoa(below))
	if m := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "gone" || m.T == "watching" }); m.T != "watching" {
		t.Fatalf("watch from rv %d, inside the window, after compacting at %d: %+v", below, compacted.Revision, m)
	}
	// What reads etcd below the compaction gets etcd's own 410.
	code, body = apiDo(t, lab, "GET", "/api/v1/namespaces/internals-demo/pods?resourceVersionMatch=Exact&resourceVersion="+itoa(below), "", "")
	if code != http.StatusGone || !strings.Contains(body, "The resourceVersion for the provided list is too old.") {
		t.Fatalf("exact list below the compaction: %d %s", code, body)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestTracer(t *testing.T) {
	t.Parallel()
	// A server of its own: the tracer shows every request, and this test
	// takes the first patch, get and create it sees (and the replay to a
	// reconnecting tracer) for its own.
	lab := startAPI(t)
	c := dial(t, lab, "/ui/ws/trace")
	label(t, lab, "traced")
	m := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "trace" && m.Trace.Verb == "patch" })
	var stages []string
	for _, r := range m.Trace.Records {
		stages = append(stages, r.Stage)
	}
	got := strings.Join(stages, ",")
	if m.Trace.Code != 200 || !strings.HasPrefix(got, "authentication,authorization,") || !strings.Contains(got, "storage") {
		t.Fatalf("trace %+v stages %s", m.Trace, got)
	}
	// The storage stage is timed around the etcd call (a round trip to a
	// member takes tens of microseconds at least), and the whole request
	// takes at least as long as its stages.
	var sum time.Duration
	for _, r := range m.Trace.Records {
		sum += r.Duration
		if r.Stage == "storage" && r.Duration < 20*time.Microsecond {
			t.Errorf("the patch's storage stage took %v: not timed around the etcd call", r.Duration)
		}
	}
	if m.Trace.Duration < sum {
		t.Errorf("the patch took %v in all, less than its stages' %v", m.Trace.Duration, sum)
	}
	// A read shows its storage stage too.
	apiDo(t, lab, "GET", "/api/v1/namespaces/internals-demo/pods/ssa-demo", "", "")
	g := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "trace" && m.Trace.Verb == "get" })
	if last := g.Trace.Records[len(g.Trace.Records)-1]; last.Stage != "storage" || last.Duration <= 0 {
		t.Errorf("the get's trace ends with %+v, want its storage stage", last)
	}
	// A denied request shows where it stopped.
	apiDo(t, lab, "POST", "/api/v1/namespaces/no-such-ns/pods", "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)
	d := next(t, c, 10*time.Second, func(m msg) bool { return m.T == "trace" && m.Trace.Verb == "create" })
	deny := ""
	for _, r := range d.Trace.Records {
		if r.Decision == "deny" {
			deny = r.Stage
		}
	}
	if d.Trace.Code < 400 || deny == "" {
		t.Fatalf("denied trace %+v", d.Trace)
	}
	// A reconnecting tracer gets what it missed.
	c2 := dial(t, lab, "/ui/ws/trace")
	next(t, c2, 10*time.Second, func(m msg) bool { return m.T == "trace" && m.Trace.Verb == "patch" })
}

func TestPollVsWatch(t *testing.T) {
	lab := startAPI(t)
	c := dial(t, lab, "/ui/ws/pollwatch")
	next(t, c, 10*time.Second, func(m msg) bool { return m.T == "stats" })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"t":"change"}`)); err != nil {
		t.Fatal(err)
	}
	type side struct {
		Requests  int64    `json:"requests"`
		Bytes     int64    `json:"bytes"`
		NoticedMs *float64 `json:"noticedMs"`
	}
	var stats struct {
		T           string
		Poll, Watch side
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(b, &stats)
		if stats.T == "stats" && stats.Poll.NoticedMs != nil && stats.Watch.NoticedMs != nil {
			break
		}
	}
	if stats.Poll.NoticedMs == nil || stats.Watch.NoticedMs == nil {
		t.Fatalf("not both noticed: %+v", stats)
	}
	if stats.Watch.Requests != 1 || stats.Poll.Requests < 2 || stats.Poll.Bytes <= 0 || stats.Watch.Bytes <= 0 {
		t.Fatalf("stats %+v", stats)
	}
	// Which side noticed first is a race of two delays tens of
	// milliseconds apart, which load decides (a poll can land just after
	// the change): the facts above are what the page's claim rests on,
	// one long request against a request per tick. The delays themselves
	// are the page's figures, not a test's.
}

// testTimelineLaneWatchesAsTheBrowsersUser: a timeline lane lists and
// watches through the registry as the browser's user: RBAC decides what it
// shows. A user whose token RBAC
// grants nothing gets kube's 403 in the lane's close reason, not kubelab's
// view of the pods.
func testTimelineLaneWatchesAsTheBrowsersUser(t *testing.T, lab *apitest.Server) {
	token, err := lab.FrontDoor().Authn.Mint(context.Background(), pipeline.User{Name: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, mode := range []string{"", "&mode=stream"} {
		c, _, err := websocket.Dial(ctx, wsURL(lab, "/ui/ws/watch?lane=A"+mode), &websocket.DialOptions{HTTPHeader: http.Header{
			"Origin": {lab.URL()}, "Authorization": {"Bearer " + token}}})
		if err != nil {
			t.Fatal(err)
		}
		for {
			_, b, err := c.Read(ctx)
			if err == nil {
				if strings.Contains(string(b), `"t":"list"`) || strings.Contains(string(b), `"t":"watching"`) {
					t.Fatalf("lane%s: a user RBAC grants nothing was shown %s", mode, b)
				}
				continue
			}
			if reason := websocket.CloseStatus(err); reason != websocket.StatusPolicyViolation || !strings.Contains(err.Error(), "403 Forbidden") || !strings.Contains(err.Error(), "nobody") {
				t.Fatalf("lane%s ended with %v", mode, err)
			}
			break
		}
	}
	// The same lane for the local user (anonymous, whom local mode makes
	// cluster-admin) lists and watches.
	lane := dial(t, lab, "/ui/ws/watch?lane=A")
	next(t, lane, 10*time.Second, func(m msg) bool { return m.T == "watching" })
}

// Run it live sends real HTTP requests to kubelab's own listener, traced
// as the view's; a client that names a view in the same headers, without
// the key only the web UI holds, is traced as itself.
func TestRunItLiveIsTracedAsTheView(t *testing.T) {
	t.Parallel()
	// A server of its own: the tracer shows every request, and another
	// test's list of the same pods would pass for Run it live's.
	lab := startAPI(t)
	tracer := dial(t, lab, "/ui/ws/trace")
	run := dial(t, lab, "/ui/ws/run?cmd=list-rv")
	next(t, run, 10*time.Second, func(m msg) bool { return m.T == "end" })
	m := next(t, tracer, 10*time.Second, func(m msg) bool {
		return m.T == "trace" && m.Trace.Path == "/api/v1/namespaces/internals-demo/pods"
	})
	if m.Trace.Source != "run-it-live" || m.Trace.Code != http.StatusOK {
		t.Fatalf("Run it live's list was traced as %+v", m.Trace)
	}
	// A wrong key, and the view header with no key at all.
	for key, path := range map[string]string{"a-guess": "/api/v1/namespaces/internals-demo/configmaps", "": "/api/v1/namespaces/internals-demo/services"} {
		req, _ := http.NewRequest("GET", lab.URL()+path, nil)
		req.Header.Set(webui.ViewHeader, "run-it-live")
		if key != "" {
			req.Header.Set(webui.ViewKeyHeader, key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		m = next(t, tracer, 10*time.Second, func(m msg) bool { return m.T == "trace" && m.Trace.Path == path })
		if m.Trace.Source != "" {
			t.Fatalf("a client with view key %q passed for the view %q", key, m.Trace.Source)
		}
	}
}

// A timeline lane's list and watch go through the registry in process,
// and the tracer shows them as it shows the same requests over HTTP: the
// list, then the watch, from the timeline, authorized as the browser's.
func TestTimelineLaneReadsAreTraced(t *testing.T) {
	t.Parallel()
	// A server of its own: the tracer shows every request, and this test
	// takes the first two on the pods' path for its lane's list and watch.
	lab := startAPI(t)
	tracer := dial(t, lab, "/ui/ws/trace")
	lane := dial(t, lab, "/ui/ws/watch?lane=A")
	next(t, lane, 10*time.Second, func(m msg) bool { return m.T == "watching" })
	const pods = "/api/v1/namespaces/internals-demo/pods"
	var verbs []string
	for len(verbs) < 2 {
		m := next(t, tracer, 10*time.Second, func(m msg) bool { return m.T == "trace" && m.Trace.Path == pods })
		if m.Trace.Source != pipeline.ViewTimeline || m.Trace.Code != http.StatusOK {
			t.Fatalf("the lane's %s was traced as %+v", m.Trace.Verb, m.Trace)
		}
		var stages []string
		for _, r := range m.Trace.Records {
			stages = append(stages, r.Stage)
		}
		if !slices.Contains(stages, string(pipeline.StageAuthorization)) {
			t.Errorf("the lane's %s trace has no authorization stage: %v", m.Trace.Verb, stages)
		}
		verbs = append(verbs, m.Trace.Verb)
	}
	if verbs[0] != "list" || verbs[1] != "watch" {
		t.Fatalf("the lane was traced as %v, want [list watch]", verbs)
	}
}
