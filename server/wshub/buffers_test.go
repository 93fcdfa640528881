package wshub

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// A browser's first message may arrive in the same read as its handshake
// (or as the one byte net/http's background read holds): the server has it
// buffered when the connection is hijacked. It must reach onMessage whole.
// The websocket library rebuilds its reader from what the hijacked reader
// reports buffered, so these bytes were once dropped, and the next frame
// was read from its middle ("unknown opcode"), closing the browser.
func TestFirstMessageSentWithTheHandshakeIsKept(t *testing.T) {
	hub := New(nil)
	got := make(chan string, 1)
	e := echo.New()
	e.GET("/ws", func(c echo.Context) error {
		cl, ok := hub.Accept(c, testSocket)
		if !ok {
			return nil
		}
		hub.Serve(cl, func(b []byte) { got <- string(b) }, nil)
		return nil
	})
	srv := httptest.NewServer(e)
	defer func() {
		hub.CloseAll()
		srv.Close()
	}()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	handshake := "GET /ws HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() + "\r\n" +
		"Upgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	// One write: the handshake and a masked text frame right behind it.
	if _, err := conn.Write(append([]byte(handshake), maskedTextFrame(`{"t":"patch"}`)...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake answered %s", resp.Status)
	}
	select {
	case m := <-got:
		if m != `{"t":"patch"}` {
			t.Fatalf("onMessage got %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message sent with the handshake never reached onMessage")
	}
}

// maskedTextFrame is one final text frame as a browser sends it (masked,
// payload under 126 bytes).
func maskedTextFrame(payload string) []byte {
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	f := []byte{0x81, 0x80 | byte(len(payload)), mask[0], mask[1], mask[2], mask[3]}
	for i, b := range []byte(payload) {
		f = append(f, b^mask[i%4])
	}
	return f
}
