//go:build !linux

package webui_test

import (
	"bufio"
	"fmt"
	"sync"
	"time"
)

// goroutineClients reads each websocket on a goroutine of its own, where
// there is no epoll (see fanout_linux_test.go).
type goroutineClients struct {
	conns   []*rawWS
	readers []*bufio.Reader
}

func newFanoutClients(conns []*rawWS) (fanoutClients, error) {
	g := &goroutineClients{conns: conns}
	for _, c := range conns {
		g.readers = append(g.readers, bufio.NewReaderSize(c, 4096))
	}
	return g, nil
}

func (g *goroutineClients) await(_ int, start time.Time, news [][]byte, timeout time.Duration) ([]time.Duration, error) {
	var (
		mu     sync.Mutex
		lat    []time.Duration
		failed error
		wg     sync.WaitGroup
	)
	for i, r := range g.readers {
		// A client the news never reaches gives up at the timeout.
		g.conns[i].SetReadDeadline(start.Add(timeout))
		wg.Go(func() {
			for {
				p, err := nextFrame(r)
				mu.Lock()
				if err != nil {
					failed = err
				} else if hasAll(p, news) {
					lat = append(lat, time.Since(start))
				}
				mu.Unlock()
				if err != nil || hasAll(p, news) {
					return
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	if len(lat) < len(g.readers) || time.Since(start) > timeout {
		return nil, fmt.Errorf("%d of %d clients got the news within %s", len(lat), len(g.readers), timeout)
	}
	return lat, nil
}

func (g *goroutineClients) close() {}
