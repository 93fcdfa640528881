package webui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/kubelab/kubelab/pipeline"
)

// hub fans the trace bus out to the tracer views, one subscription for
// all of them: each trace is encoded once and queued, without waiting, for
// every view of its user. It also ticks the watch timelines' clock.
type hub struct {
	mu        sync.Mutex
	tracers   map[string]map[*client]struct{} // by user name
	timelines map[*client]struct{}
	all       map[*client]struct{}
	closed    bool
	// tooSlow counts clients closed for not keeping up.
	tooSlow atomic.Uint64
}

func newHub() *hub {
	return &hub{tracers: map[string]map[*client]struct{}{}, timelines: map[*client]struct{}{}, all: map[*client]struct{}{}}
}

// add registers a client until it ends; false if the UI is closing.
func (h *hub) add(cl *client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.all[cl] = struct{}{}
	return true
}

func (h *hub) remove(cl *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.all[cl]; ok && cl.code == StatusTooSlow {
		h.tooSlow.Add(1)
	}
	delete(h.all, cl)
	delete(h.timelines, cl)
	for name, set := range h.tracers {
		if _, ok := set[cl]; ok {
			delete(set, cl)
			if len(set) == 0 {
				delete(h.tracers, name)
			}
		}
	}
}

func (h *hub) addTracer(userName string, cl *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.tracers[userName]
	if set == nil {
		set = map[*client]struct{}{}
		h.tracers[userName] = set
	}
	set[cl] = struct{}{}
}

func (h *hub) addTimeline(cl *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timelines[cl] = struct{}{}
}

// closeAll ends every client: the server is stopping. Hijacked websocket
// connections are not ended by the HTTP server's shutdown.
func (h *hub) closeAll() {
	h.mu.Lock()
	h.closed = true
	clients := make([]*client, 0, len(h.all))
	for cl := range h.all {
		clients = append(clients, cl)
	}
	h.mu.Unlock()
	for _, cl := range clients {
		cl.close(websocket.StatusGoingAway, "server shutting down")
	}
}

// traceMsg is a trace for the tracer view.
type traceMsg struct {
	T      string          `json:"t"`
	Replay bool            `json:"replay,omitempty"`
	Trace  *pipeline.Trace `json:"trace"`
}

// shownTrace: the tracer shows API requests, not the page's own assets.
func shownTrace(t *pipeline.Trace) bool {
	return t.Path == "/api" || t.Path == "/apis" || strings.HasPrefix(t.Path, "/api/") || strings.HasPrefix(t.Path, "/apis/")
}

// runTraces delivers traces until ctx ends.
func (h *hub) runTraces(ctx context.Context, traces <-chan pipeline.Trace) {
	for t := range traces {
		if !shownTrace(&t) {
			continue
		}
		h.mu.Lock()
		set := h.tracers[t.User]
		if len(set) == 0 {
			h.mu.Unlock()
			continue
		}
		b, err := json.Marshal(traceMsg{T: "trace", Trace: &t})
		if err == nil {
			for cl := range set {
				cl.sendRaw(b)
			}
		}
		h.mu.Unlock()
	}
}

// runClock ticks every timeline each interval until ctx ends, with the
// clock and horizons read once for all of them.
func (h *hub) runClock(ctx context.Context, read func(context.Context) horizons, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		h.mu.Lock()
		n := len(h.timelines)
		h.mu.Unlock()
		if n == 0 {
			continue
		}
		b, _ := json.Marshal(clockMsg{T: "clock", horizons: read(ctx)})
		h.mu.Lock()
		for cl := range h.timelines {
			cl.sendRaw(b)
		}
		h.mu.Unlock()
	}
}
