package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// In classroom mode the inspector goes by what RBAC lets the browser's
// user do: nothing for a browser that has not joined, and only their own
// namespace's keys for a student. "Compact now" is the instructor's.
func TestClassroomEtcdAccess(t *testing.T) {
	// A server of its own, in classroom mode, whose push moves the window
	// under every watcher; side by side with the others, as its push waits
	// on the 409 that says how long to wait, not on a fixed time.
	t.Parallel()
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.JoinCode = "k8s-101"
		c.SecureListen = "127.0.0.1:0"
		c.WatchCacheEventFreshness = time.Second
	})
	get := func(b *http.Client, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", lab.URL()+path, nil)
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	compact := func(b *http.Client) int {
		req, _ := http.NewRequest("POST", lab.URL()+"/ui/compact", nil)
		req.Header.Set("Origin", lab.URL())
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("ErrAnonymous", func(t *testing.T) {
		if code, body := get(http.DefaultClient, "/ui/etcd/keys?prefix=/registry/"); code != http.StatusForbidden {
			t.Fatalf("%d %.200s", code, body)
		}
		if code, _ := get(http.DefaultClient, "/ui/etcd/value?key=/registry/pods/internals-demo/ssa-demo"); code != http.StatusForbidden {
			t.Fatalf("value: %d", code)
		}
		if code := compact(http.DefaultClient); code != http.StatusForbidden {
			t.Fatalf("compact: %d", code)
		}
	})

	var who struct{ Name string }
	join := func(name string) (*http.Client, *cookiejar.Jar) {
		jar, _ := cookiejar.New(nil)
		b := &http.Client{Jar: jar}
		req, _ := http.NewRequest("POST", lab.URL()+"/signin", strings.NewReader(url.Values{"name": {name}, "code": {"k8s-101"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&who)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || who.Name == "" {
			t.Fatalf("join: %d %+v", resp.StatusCode, who)
		}
		return b, jar
	}
	_, bobJar := join("Bob")
	alice, jar := join("Alice")

	t.Run("ErrTooManyLiveViews", func(t *testing.T) {
		ctx := context.Background()
		u, _ := url.Parse(lab.URL())
		header := http.Header{"Origin": {lab.URL()}}
		for _, c := range jar.Cookies(u) {
			header.Add("Cookie", c.String())
		}
		var open []*websocket.Conn
		defer func() {
			for _, c := range open {
				c.CloseNow()
			}
		}()
		for i := 0; i < server.MaxUserWebsockets; i++ {
			c, _, err := websocket.Dial(ctx, wsURL(lab, "/ui/ws/trace"), &websocket.DialOptions{HTTPHeader: header})
			if err != nil {
				t.Fatalf("view %d: %v", i+1, err)
			}
			open = append(open, c)
		}
		_, resp, err := websocket.Dial(ctx, wsURL(lab, "/ui/ws/trace"), &websocket.DialOptions{HTTPHeader: header})
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("view %d: %v %+v", server.MaxUserWebsockets+1, err, resp)
		}
		// Another user is not held back by Alice's views.
		bob := http.Header{"Origin": {lab.URL()}}
		for _, c := range bobJar.Cookies(u) {
			bob.Add("Cookie", c.String())
		}
		if c, _, err := websocket.Dial(ctx, wsURL(lab, "/ui/ws/trace"), &websocket.DialOptions{HTTPHeader: bob}); err != nil {
			t.Fatalf("bob's view: %v", err)
		} else {
			c.CloseNow()
		}
		// A closed view gives its place back.
		open[0].Close(websocket.StatusNormalClosure, "")
		open = open[1:]
		eventually.Holds(t, "a view's place given back", func() (bool, error) {
			c, _, err := websocket.Dial(ctx, wsURL(lab, "/ui/ws/trace"), &websocket.DialOptions{HTTPHeader: header})
			if err == nil {
				open = append(open, c)
			}
			return err == nil, nil
		})
	})

	t.Run("OK student reads own namespace only", func(t *testing.T) {
		code, body := get(alice, "/ui/etcd/keys?prefix=/registry/")
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		var keys struct{ Keys []string }
		json.Unmarshal([]byte(body), &keys)
		for _, k := range keys.Keys {
			if !strings.Contains(k, "/"+who.Name+"/") {
				t.Errorf("a student sees %s", k)
			}
		}
		if code, _ := get(alice, "/ui/etcd/value?key=/registry/pods/internals-demo/ssa-demo"); code != http.StatusForbidden {
			t.Fatalf("another namespace's key: %d", code)
		}
		if code, _ := get(alice, "/ui/etcd/keys?prefix=/registry/secrets/"); code != 200 {
			t.Fatalf("secrets prefix: %d", code)
		}
		// etcd is the class's: a student's compaction would fail every
		// student's older watches.
		if code := compact(alice); code != http.StatusForbidden {
			t.Fatalf("a student compacts the class's etcd: %d", code)
		}
	})

	// "Push the window past B" changes the pusher's own pod, as them: an
	// anonymous browser, who has no pod, is refused.
	t.Run("ErrWindowPushNotSignedIn", func(t *testing.T) {
		req, _ := http.NewRequest("POST", lab.URL()+"/ui/window/push", strings.NewReader(`{"past":1}`))
		req.Header.Set("Origin", lab.URL())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an anonymous push: %d", resp.StatusCode)
		}
	})

	// A signed-in student's browser, on a page of another site, cannot
	// push: the push would change the student's pod, as them. The same
	// push from kubelab's own page, made just after, does change it.
	t.Run("ErrWindowPushCrossSite", func(t *testing.T) {
		ns := who.Name
		pod := "/api/v1/namespaces/" + ns + "/pods/ssa-demo"
		send := func(method, path, body string, header http.Header) (int, string) {
			t.Helper()
			req, _ := http.NewRequest(method, lab.URL()+path, strings.NewReader(body))
			req.Header = header
			resp, err := alice.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		own := http.Header{"Origin": {lab.URL()}, "Content-Type": {"application/json"}}
		relabel := func(value string) int64 {
			t.Helper()
			h := http.Header{"Origin": {lab.URL()}, "Content-Type": {"application/merge-patch+json"}}
			code, body := send("PATCH", pod, `{"metadata":{"labels":{"demo-round":"`+value+`"}}}`, h)
			var p struct {
				Metadata struct{ ResourceVersion string }
			}
			json.Unmarshal([]byte(body), &p)
			rv, err := strconv.ParseInt(p.Metadata.ResourceVersion, 10, 64)
			if code != http.StatusOK || err != nil {
				t.Fatalf("label: %d %s", code, body)
			}
			return rv
		}
		paused := relabel("cross-one")
		relabel("cross-two")    // the change a paused watcher missed
		time.Sleep(time.Second) // the freshness: the window may now drop it
		push := `{"past":` + strconv.FormatInt(paused, 10) + `}`
		head, err := lab.EtcdClient().Get(context.Background(), "/", clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]http.Header{
			"a foreign Origin":          {"Origin": {"https://evil.example"}, "Content-Type": {"application/json"}},
			"a cross-site fetch":        {"Sec-Fetch-Site": {"cross-site"}, "Content-Type": {"application/json"}},
			"a foreign Origin, as text": {"Origin": {"https://evil.example"}, "Content-Type": {"text/plain"}},
		} {
			if code, body := send("POST", "/ui/window/push", push, h); code != http.StatusForbidden {
				t.Errorf("%s: %d %s", name, code, body)
			}
		}
		for _, k := range lab.KeysWrittenSince(t, head.Header.Revision) {
			if strings.HasPrefix(k, "/registry/pods/"+ns+"/") {
				t.Errorf("a refused push wrote %s", k)
			}
		}
		var pushed struct {
			Changes int
			Passed  bool
		}
		// The window keeps a change until it is a freshness old by the watch
		// cache's clock, which saw it a moment after the PATCH returned:
		// asked a moment early, the push says how long to wait (409 with
		// retryAfterSeconds), as it tells the page.
		code, body := send("POST", "/ui/window/push", push, own)
		for deadline := time.Now().Add(30 * time.Second); code == http.StatusConflict && time.Now().Before(deadline); {
			time.Sleep(time.Second)
			code, body = send("POST", "/ui/window/push", push, own)
		}
		json.Unmarshal([]byte(body), &pushed)
		if code != http.StatusOK || pushed.Changes < 1 || !pushed.Passed {
			t.Fatalf("the same push from kubelab's page: %d %s", code, body)
		}
	})
}
