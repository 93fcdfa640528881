//go:build linux

package webui_test

import (
	"fmt"
	"net"
	"syscall"
	"time"
)

// epollClients reads the benchmark's websockets as cheaply as a client
// can: one goroutine, one epoll set, one read per delivery. The browsers
// the benchmark stands for run on other machines and cost the server
// nothing; a goroutine per client here would spend the two cores the
// server also needs on a read that finds nothing, a park and a wake-up,
// per client and per round.
type epollClients struct {
	epfd   int
	conns  map[int32]*epollConn
	events []syscall.EpollEvent
	chunk  []byte
}

type epollConn struct {
	fd    int
	buf   []byte // bytes read and not yet parsed into frames
	round int    // the last round this client got the news in; -1 for none
}

func newFanoutClients(conns []*rawWS) (fanoutClients, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	e := &epollClients{epfd: epfd, conns: map[int32]*epollConn{}, events: make([]syscall.EpollEvent, 256), chunk: make([]byte, 64*1024)}
	for _, ws := range conns {
		fd, err := rawFD(ws.Conn)
		if err != nil {
			e.close()
			return nil, err
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			e.close()
			return nil, err
		}
		e.conns[int32(fd)] = &epollConn{fd: fd, round: -1}
	}
	return e, nil
}

// rawFD is the connection's socket. The benchmark owns it for the
// connection's life; Go's poller keeps it non-blocking.
func rawFD(c net.Conn) (int, error) {
	sc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd int
	if err := sc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return 0, err
	}
	return fd, nil
}

func (e *epollClients) await(round int, start time.Time, news [][]byte, timeout time.Duration) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, len(e.conns))
	deadline := start.Add(timeout)
	for len(lat) < len(e.conns) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d clients got the news within %s", len(lat), len(e.conns), timeout)
		}
		n, err := syscall.EpollWait(e.epfd, e.events, 100)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, ev := range e.events[:n] {
			c := e.conns[ev.Fd]
			got, err := c.read(e.chunk, round, news)
			if err != nil {
				return nil, err
			}
			if got {
				lat = append(lat, time.Since(start))
			}
		}
	}
	return lat, nil
}

// read takes what the socket has and reports whether a frame with the
// news was among it, for the first time this round.
func (c *epollConn) read(chunk []byte, round int, news [][]byte) (bool, error) {
	n, err := syscall.Read(c.fd, chunk)
	if err == syscall.EAGAIN {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, fmt.Errorf("the server closed the connection")
	}
	// Whole frames are parsed where they were read; only a frame split
	// across reads is kept, so that a round allocates nothing.
	b := chunk[:n]
	if len(c.buf) > 0 {
		c.buf = append(c.buf, b...)
		b = c.buf
	}
	got := false
	for {
		payload, size, err := parseFrame(b)
		if err != nil {
			return false, err
		}
		if size == 0 {
			break // a frame not yet whole
		}
		if c.round != round && hasAll(payload, news) {
			c.round, got = round, true
		}
		b = b[size:]
	}
	c.buf = append(c.buf[:0], b...)
	return got, nil
}

func (e *epollClients) close() { syscall.Close(e.epfd) }
