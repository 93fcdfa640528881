// Package freeport finds loopback ports for servers that must be told their
// address before they bind it (an etcd member's client and peer URLs).
//
// The usual trick, binding port 0 and closing the listener, hands out a
// port from the kernel's ephemeral range, the same range every outgoing
// connection takes its local port from. On a machine running many tests at
// once, one of their client connections can take that port before the
// server binds it. Ports below the ephemeral range are never given to
// outgoing connections, so only another explicit bind can collide, and a
// random pick among thousands makes that rare. Within a process no port is
// handed out twice: a member's client and peer URLs are picked one after
// the other, before either is bound.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the bottom of the range Loopback picks from: above the
// well-known and most registered service ports.
const lowest = 10000

// given are the ports this process has handed out.
var given struct {
	sync.Mutex
	ports map[int]bool
}

// Loopback returns 127.0.0.1:port with a port that nothing was listening on
// a moment ago and that no outgoing connection will be given.
func Loopback() (string, error) {
	highest := ephemeralStart() - 1
	if highest > lowest {
		if addr, err := pick(lowest, highest); err == nil {
			return addr, nil
		}
	}
	return anyPort()
}

// pick tries random ports in [low, high] until one can be bound.
func pick(low, high int) (string, error) {
	given.Lock()
	defer given.Unlock()
	if given.ports == nil {
		given.ports = map[int]bool{}
	}
	for range 100 {
		port := low + rand.IntN(high-low+1)
		if given.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken; try another
		}
		addr := l.Addr().String()
		l.Close()
		given.ports[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("no free loopback port in %d-%d after 100 tries", low, high)
}

// ephemeralStart is the first port of the kernel's ephemeral range, as
// Linux reports it; elsewhere 32768, Linux's default and below the 49152
// other systems start at.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 32768
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return start
}

// Retry runs start, which binds ports picked beforehand, up to three times
// while it fails because one of them was taken in between.
func Retry(start func() error) error {
	for attempt := 1; ; attempt++ {
		err := start()
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
}

// anyPort is the fallback for a kernel whose ephemeral range starts so low
// that little or nothing is left below it.
func anyPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
