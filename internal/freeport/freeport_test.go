package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestLoopbackIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	limit := ephemeralStart()
	seen := map[string]bool{}
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
		seen[addr] = true
	}
	if len(seen) < 40 {
		t.Fatalf("50 picks gave only %d different ports: the pick is not random enough", len(seen))
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
