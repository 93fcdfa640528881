package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// In classroom mode the inspector goes by what RBAC lets the browser's
// user do: nothing for a browser that has not joined, and only their own
// namespace's keys for a student. "Compact now" is the instructor's.
func TestClassroomEtcdAccess(t *testing.T) {
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Classroom = true
		c.JoinCode = "k8s-101"
		c.SecureListen = "127.0.0.1:0"
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
		kubelabtest.Eventually(t, "a view's place given back", func() (bool, error) {
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
}
