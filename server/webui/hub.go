package webui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/wshub"
)

// hub fans the trace bus out to the tracer views, one subscription for
// all of them: each trace is encoded once and queued, without waiting, for
// every view of its user. It also ticks the watch timelines' clock. Every
// live view's websocket is one of sockets, which shutdown ends.
type hub struct {
	sockets   *wshub.Hub
	mu        sync.Mutex
	tracers   map[string]map[*client]struct{} // by user name
	timelines map[*client]struct{}
}

// client is one live view's websocket.
type client = wshub.Client

func newHub(counter wshub.Counter) *hub {
	return &hub{sockets: wshub.New(counter), tracers: map[string]map[*client]struct{}{}, timelines: map[*client]struct{}{}}
}

// remove forgets a client that ended.
func (h *hub) remove(cl *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
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
				cl.SendRaw(b)
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
			cl.SendRaw(b)
		}
		h.mu.Unlock()
	}
}
