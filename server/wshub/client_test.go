package wshub

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A browser that stops reading is closed with 1013 and a reason, and the
// server's sender never blocks on it.
func TestSlowClientIsClosed(t *testing.T) {
	hub := New(nil)
	queued := make(chan int, 1)
	big := []byte(`"` + strings.Repeat("x", 64*1024) + `"`)
	srv := testServer(t, hub, testSocket, func(cl *Client) {
		go func() {
			start := time.Now()
			for i := 0; ; i++ {
				if !cl.SendRaw(big) {
					queued <- i
					return
				}
				if time.Since(start) > 20*time.Second {
					queued <- -1
					return
				}
			}
		}()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	n := <-queued // the client reads nothing until the server gives up on it
	if n < testSocket.Queue {
		t.Fatalf("closed after %d messages, before the queue of %d was full", n, testSocket.Queue)
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
	waitFor(t, "the slow client counted", func() bool { return hub.Stats().TooSlow == 1 && hub.Stats().Clients == 0 })
}

// connectOne serves one websocket with writeTimeout set to timeout for the
// test, and dials it. The server side is handed to setup before it is
// served, and returned once the browser is connected.
func connectOne(t *testing.T, timeout time.Duration, setup func(*Client)) (*Client, *websocket.Conn, context.Context) {
	t.Helper()
	saved := writeTimeout
	writeTimeout = timeout
	t.Cleanup(func() { writeTimeout = saved })
	served := make(chan *Client, 1)
	srv := testServer(t, New(nil), testSocket, func(cl *Client) {
		setup(cl)
		served <- cl
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	conn.SetReadLimit(2 << 20)
	select {
	case cl := <-served:
		return cl, conn, ctx
	case <-ctx.Done():
		t.Fatal("the server never took the connection")
		return nil, nil, nil
	}
}

// awaitClosed waits for the client's close and checks its reason.
func awaitClosed(t *testing.T, cl *Client, reason string) {
	t.Helper()
	select {
	case <-cl.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the client was not closed (%q) within 10 s", reason)
	}
	if cl.reason != reason {
		t.Fatalf("closed with %d %q, want %q", cl.code, cl.reason, reason)
	}
}

// A write that a browser leaves stuck (it stopped reading, and the socket's
// buffers are full before the send queue is) ends the connection once
// writeTimeout has passed.
func TestStuckWriteEndsTheConnection(t *testing.T) {
	huge := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	cl, _, _ := connectOne(t, 300*time.Millisecond, func(cl *Client) {
		// Fewer than the queue's limit of messages, but more than loopback's socket
		// buffers hold.
		for range testSocket.Queue / 2 {
			cl.SendRaw(huge)
		}
	})
	awaitClosed(t, cl, "write failed")
	if cl.code != websocket.StatusGoingAway {
		t.Fatalf("closed with %d, want %d", cl.code, websocket.StatusGoingAway)
	}
}

// sendAndWrite writes on the caller's goroutine: when it returns, the
// message is on the wire and no writer is left running. A browser that
// stops reading holds up that caller only until the write times out; a
// sendRaw beside it never waits.
func TestSendAndWriteWritesOnTheCaller(t *testing.T) {
	// A sendRaw that waited for the stuck write would wait its 10 s;
	// one that does not returns well within the 2 s bound below, on a
	// loaded machine and under the race detector too.
	cl, conn, ctx := connectOne(t, 10*time.Second, func(*Client) {})
	if !cl.SendAndWrite([]byte(`{"t":"event"}`)) {
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
		for range testSocket.Queue / 2 {
			if !cl.SendAndWrite(huge) {
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the lane is stuck in a write by now
	start := time.Now()
	cl.SendRaw([]byte(`{"t":"clock"}`))
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("sendRaw waited %s beside a stuck writer", d)
	}
	select {
	case <-lane:
	case <-time.After(30 * time.Second):
		t.Fatal("the stuck sender was not released by the write timeout")
	}
	awaitClosed(t, cl, "write failed")
}

// A browser that closes after the server has been quiet for longer than
// writeTimeout gets its close answered: no deadline of an earlier write
// is left to fail the reply, which the websocket writes on its own.
func TestCloseAnsweredAfterAQuietSpell(t *testing.T) {
	_, conn, ctx := connectOne(t, 200*time.Millisecond, func(cl *Client) {
		cl.SendRaw([]byte(`{"t":"hello"}`))
	})
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
