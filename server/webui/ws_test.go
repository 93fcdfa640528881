package webui

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// A browser that stops reading is closed with 1013 and a reason, and the
// server's sender never blocks on it.
func TestSlowClientIsClosed(t *testing.T) {
	e := echo.New()
	u := &UI{hub: newHub(0)}
	queued := make(chan int, 1)
	big := []byte(`"` + strings.Repeat("x", 64*1024) + `"`)
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := u.accept(c, smallWriteBuffer)
		if !ok {
			return nil
		}
		go func() {
			start := time.Now()
			for i := 0; ; i++ {
				if !cl.sendRaw(big) {
					queued <- i
					return
				}
				if time.Since(start) > 20*time.Second {
					queued <- -1
					return
				}
			}
		}()
		u.serve(cl, nil)
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
	conn.SetReadLimit(1 << 20)
	n := <-queued // the client reads nothing until the server gives up on it
	if n < sendQueue {
		t.Fatalf("closed after %d messages, before the queue of %d was full", n, sendQueue)
	}
	for {
		if _, _, err = conn.Read(ctx); err != nil {
			break
		}
	}
	if websocket.CloseStatus(err) != StatusTooSlow {
		t.Fatalf("closed with %v, want %d", err, StatusTooSlow)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "resume") {
		t.Fatalf("close reason %q", ce.Reason)
	}
}

// A write that a browser leaves stuck (it stopped reading, and the socket's
// buffers are full before the send queue is) ends the connection once
// writeTimeout has passed.
func TestStuckWriteEndsTheConnection(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 300 * time.Millisecond
	e := echo.New()
	u := &UI{hub: newHub(0)}
	served := make(chan *client, 1)
	huge := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := u.accept(c, smallWriteBuffer)
		if !ok {
			return nil
		}
		// Fewer than sendQueue messages, but more than loopback's socket
		// buffers hold.
		for range sendQueue / 2 {
			cl.sendRaw(huge)
		}
		served <- cl
		u.serve(cl, nil)
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
	cl := <-served
	select {
	case <-cl.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck write did not end the connection within 10 s")
	}
	if cl.code != websocket.StatusGoingAway || cl.reason != "write failed" {
		t.Fatalf("closed with %d %q, want %d \"write failed\"", cl.code, cl.reason, websocket.StatusGoingAway)
	}
}

// sendAndWrite writes on the caller's goroutine: when it returns, the
// message is on the wire and no writer is left running. A browser that
// stops reading holds up that caller only until the write times out; a
// sendRaw beside it never waits.
func TestSendAndWriteWritesOnTheCaller(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 2 * time.Second
	e := echo.New()
	u := &UI{hub: newHub(0)}
	served := make(chan *client, 1)
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := u.accept(c, smallWriteBuffer)
		if !ok {
			return nil
		}
		served <- cl
		u.serve(cl, nil)
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
	conn.SetReadLimit(2 << 20)
	cl := <-served

	if !cl.sendAndWrite([]byte(`{"t":"event"}`)) {
		t.Fatal("sendAndWrite refused a message to a reading browser")
	}
	cl.mu.Lock()
	writing, queued := cl.writing, len(cl.queue)
	cl.mu.Unlock()
	if writing || queued != 0 {
		t.Fatalf("after sendAndWrite: writing %v, %d queued; want the caller to have written it all", writing, queued)
	}
	if _, b, err := conn.Read(ctx); err != nil || string(b) != `{"t":"event"}` {
		t.Fatalf("read %q, %v", b, err)
	}

	// Now the browser stops reading.
	huge := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	lane := make(chan struct{})
	go func() {
		defer close(lane)
		for range sendQueue / 2 {
			if !cl.sendAndWrite(huge) {
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the lane is stuck in a write by now
	start := time.Now()
	cl.sendRaw([]byte(`{"t":"clock"}`))
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("sendRaw waited %s beside a stuck writer", d)
	}
	select {
	case <-lane:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck sender was not released by the write timeout")
	}
	select {
	case <-cl.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not close after its write failed")
	}
	if cl.reason != "write failed" {
		t.Fatalf("closed with %q, want \"write failed\"", cl.reason)
	}
}

// A browser that closes after the server has been quiet for longer than
// writeTimeout gets its close answered: no deadline of an earlier write
// is left to fail the reply, which the websocket writes on its own.
func TestCloseAnsweredAfterAQuietSpell(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 200 * time.Millisecond
	e := echo.New()
	u := &UI{hub: newHub(0)}
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := u.accept(c, smallWriteBuffer)
		if !ok {
			return nil
		}
		cl.sendRaw([]byte(`{"t":"hello"}`))
		u.serve(cl, nil)
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
	if _, b, err := conn.Read(ctx); err != nil || string(b) != `{"t":"hello"}` {
		t.Fatalf("read %q, %v", b, err)
	}
	ctx = conn.CloseRead(ctx) // reads on, for the pong and the close
	time.Sleep(3 * writeTimeout)
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("ping after a quiet spell: %v", err)
	}
	if err := conn.Close(websocket.StatusNormalClosure, "stopped"); err != nil {
		t.Fatalf("close after a quiet spell: %v", err)
	}
}
