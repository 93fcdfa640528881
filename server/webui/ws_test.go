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
