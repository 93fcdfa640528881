package wshub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
)

// testSocket is sized as the live views' websockets are.
var testSocket = Options{Queue: 64, ReadLimit: 4096, WriteBuffer: 1024}

// counts is a Counter as the server's: a cap per user.
type counts struct {
	mu  sync.Mutex
	max int
	n   map[string]int
}

func (c *counts) Enter(user string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[user] >= c.max {
		return false
	}
	c.n[user]++
	return true
}

func (c *counts) Leave(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[user]--
}

func (c *counts) Limit() int { return c.max }

func (c *counts) of(user string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[user]
}

// testServer serves websockets of hub at /ws, each handed to setup before
// it is served, as the user named by the X-User header acting as the one
// named by X-As (the front door's part). API errors are answered with
// their code and message, as the server's error handler does.
func testServer(t *testing.T, hub *Hub, opts Options, setup func(*Client)) *httptest.Server {
	t.Helper()
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if st, ok := err.(apierrors.APIStatus); ok {
			c.String(int(st.Status().Code), st.Status().Message)
			return
		}
		c.NoContent(http.StatusInternalServerError)
	}
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			ctx := pipeline.WithRequest(r.Context(), nil, pipeline.User{Name: r.Header.Get("X-User")}, pipeline.User{Name: r.Header.Get("X-As")})
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
	})
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := hub.Accept(c, opts)
		if !ok {
			return nil
		}
		if setup != nil {
			setup(cl)
		}
		hub.Serve(cl, nil, nil)
		return nil
	})
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		hub.CloseAll()
		srv.Close()
	})
	return srv
}

func dial(ctx context.Context, srv *httptest.Server, user, as string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	h.Set("X-User", user)
	h.Set("X-As", as)
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", &websocket.DialOptions{HTTPHeader: h})
}

// waitFor polls cond for up to 10 s: the server's side of a close runs on
// goroutines of its own.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The cap counts the authenticated user's websockets, whichever name they
// act as; one past it gets 429 with the lab's message, and a place comes
// back when a websocket closes.
func TestCapCountsTheAuthenticatedUser(t *testing.T) {
	c := &counts{max: 2, n: map[string]int{}}
	hub := New(c)
	srv := testServer(t, hub, testSocket, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first, _, err := dial(ctx, srv, "alice", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer first.CloseNow()
	second, _, err := dial(ctx, srv, "alice", "system:serviceaccount:alice:default")
	if err != nil {
		t.Fatal(err)
	}
	defer second.CloseNow()
	_, resp, err := dial(ctx, srv, "alice", "system:serviceaccount:alice:other")
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third websocket of alice: %v, %v; want 429", resp, err)
	}
	// Bob has his own allowance.
	bob, _, err := dial(ctx, srv, "bob", "bob")
	if err != nil {
		t.Fatalf("bob refused because of alice's websockets: %v", err)
	}
	defer bob.CloseNow()
	// The server counts a client once its upgrade returns, which can be a
	// moment after the browser's side of the handshake has.
	waitFor(t, "three clients counted", func() bool { return hub.Stats().Clients == 3 })

	first.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "alice's place given back", func() bool { return c.of("alice") == 1 })
	again, _, err := dial(ctx, srv, "alice", "alice")
	if err != nil {
		t.Fatalf("refused after a websocket closed: %v", err)
	}
	defer again.CloseNow()
}

// The refusal says what the cap is and what to do.
func TestCapRefusalMessage(t *testing.T) {
	hub := New(&counts{max: 0, n: map[string]int{}})
	srv := testServer(t, hub, testSocket, nil)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	want := "too many live views open: at most 0 per user; close another tab of the lab"
	if resp.StatusCode != http.StatusTooManyRequests || b.String() != want {
		t.Fatalf("got %d %q, want 429 %q", resp.StatusCode, b.String(), want)
	}
}

// A page of another site may not open a websocket, and its attempt does
// not use up a place.
func TestForeignOriginRefused(t *testing.T) {
	c := &counts{max: 1, n: map[string]int{}}
	hub := New(c)
	srv := testServer(t, hub, testSocket, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Origin", "https://evil.example")
	h.Set("X-User", "alice")
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", &websocket.DialOptions{HTTPHeader: h})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site websocket: %v, %v; want 403", resp, err)
	}
	if n := c.of("alice"); n != 0 {
		t.Fatalf("a refused websocket holds %d places", n)
	}
}

// CloseAll ends every client with 1001 and refuses new ones the same way.
func TestCloseAllEndsEveryClient(t *testing.T) {
	c := &counts{max: 10, n: map[string]int{}}
	hub := New(c)
	srv := testServer(t, hub, testSocket, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := dial(ctx, srv, "alice", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	waitFor(t, "the client registered", func() bool { return hub.Stats().Clients == 1 })
	hub.CloseAll()
	_, _, err = conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != "server shutting down" {
		t.Fatalf("closed with %v, want 1001 server shutting down", err)
	}
	waitFor(t, "the client gone", func() bool { return hub.Stats().Clients == 0 && c.of("alice") == 0 })

	late, _, err := dial(ctx, srv, "alice", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer late.CloseNow()
	_, _, err = late.Read(ctx)
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway {
		t.Fatalf("a websocket after CloseAll: %v, want 1001", err)
	}
	waitFor(t, "the late place given back", func() bool { return c.of("alice") == 0 })
}

// Each message the browser sends reaches onMessage, and onClosed runs
// before Done is closed.
func TestServeDeliversMessages(t *testing.T) {
	hub := New(nil)
	got := make(chan string, 1)
	var closed *Client
	done := make(chan struct{})
	e := echo.New()
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := hub.Accept(c, testSocket)
		if !ok {
			return nil
		}
		hub.Serve(cl, func(b []byte) { got <- string(b) }, func() { closed = cl })
		<-cl.Done()
		if closed != cl {
			t.Error("Done closed before onClosed ran")
		}
		close(done)
		return nil
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"t":"patch"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != `{"t":"patch"}` {
			t.Fatalf("onMessage got %q", m)
		}
	case <-ctx.Done():
		t.Fatal("the message never reached onMessage")
	}
	conn.Close(websocket.StatusNormalClosure, "")
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the client did not end")
	}
}
