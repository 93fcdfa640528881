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
		cl, ok := u.accept(c)
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
