package freeport

import (
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
)

func TestLoopbackIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	limit := ephemeralStart()
	for range 50 {
		addr, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(portText)
		if host != "127.0.0.1" || port < lowest || port >= limit {
			t.Fatalf("Loopback() = %s, want 127.0.0.1 with a port in [%d, %d)", addr, lowest, limit)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the port Loopback returned cannot be bound: %v", err)
		}
		l.Close()
	}
}

// A port someone listens on is never handed out, nor one handed out
// before: with two ports to pick from and one held, the pick is the other,
// and then there is none.
func TestPickSkipsAPortInUse(t *testing.T) {
	held, err := Loopback()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", held)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, portText, _ := net.SplitHostPort(held)
	port, _ := strconv.Atoi(portText)
	low, high, other := port, port+1, port+1
	addr, err := pick(low, high)
	if err != nil {
		t.Skipf("the neighbouring port %d is taken too: %v", other, err)
	}
	if addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(other)) {
		t.Fatalf("pick(%d, %d) = %s with %s held, want port %d", low, high, addr, held, other)
	}
	// Both are given now: nothing is left in the range.
	if addr, err := pick(low, high); err == nil {
		t.Fatalf("pick(%d, %d) = %s, a port it had handed out already", low, high, addr)
	}
}

// Retry starts again only while a port was taken, and at most three times.
func TestRetry(t *testing.T) {
	taken := errors.New("listen tcp 127.0.0.1:12345: bind: address already in use")
	for _, c := range []struct {
		errs  []error
		calls int
		err   error
	}{
		{[]error{nil}, 1, nil},
		{[]error{taken, nil}, 2, nil},
		{[]error{taken, taken, taken, nil}, 3, taken},
		{[]error{io.EOF, nil}, 1, io.EOF},
	} {
		calls := 0
		err := Retry(func() error { calls++; return c.errs[calls-1] })
		if calls != c.calls || err != c.err {
			t.Errorf("with %v: %d calls and %v, want %d and %v", c.errs, calls, err, c.calls, c.err)
		}
	}
}
