// Package handoff lets a long-running response, a watch, go on after its
// handler has returned, on a goroutine of its own.
//
// A handler runs on a goroutine whose stack the middleware chain and the
// request's processing have grown, and while a watch waits for events
// that stack, and every frame below the wait, waits with it. A caller
// that serves requests in-process (the web UI's live views each serve a
// real API watch through the router) offers a Handoff in the request's
// context; the watch handler takes it once the request has passed the
// pipeline, runs its stream on a fresh goroutine and returns. What
// middleware does when a response ends it defers with After, so that it
// still happens when the stream ends, not when the handler returns.
//
// Over net/http nothing is offered: a handler that returned would end
// the response.
package handoff

import (
	"context"
	"sync"
)

// Handoff is offered to the handler of one request.
type Handoff struct {
	mu sync.Mutex
	// taken: the handler runs the rest of the response on a goroutine of
	// its own; streamed: that goroutine has finished; served: the
	// caller's ServeHTTP has returned, so no more After can come.
	taken, streamed, served bool
	after                   []func()
	onEnd                   func()
}

type key struct{}

// Offer returns ctx with a Handoff for the request served with it.
// onEnd runs once a response that was taken has ended, after every
// After of the request; the caller reports with Served when its
// ServeHTTP has returned.
func Offer(ctx context.Context, onEnd func()) (context.Context, *Handoff) {
	h := &Handoff{onEnd: onEnd}
	return context.WithValue(ctx, key{}, h), h
}

func from(ctx context.Context) *Handoff {
	h, _ := ctx.Value(key{}).(*Handoff)
	return h
}

// Take runs stream on a new goroutine if ctx offers a Handoff, and
// reports whether it did; if not, the handler runs stream itself.
func Take(ctx context.Context, stream func()) bool {
	h := from(ctx)
	if h == nil {
		return false
	}
	h.mu.Lock()
	h.taken = true
	h.mu.Unlock()
	go func() {
		stream()
		h.mu.Lock()
		h.streamed = true
		after := h.after
		h.after = nil
		end := h.served
		h.mu.Unlock()
		for _, f := range after {
			f()
		}
		if end {
			h.onEnd()
		}
	}()
	return true
}

// After runs f when the response to the request with ctx has ended: at
// once, unless its handler took the Handoff and the stream is still
// running, in which case when it ends. Middleware calls it where it
// would otherwise do its end-of-response work on the way out.
func After(ctx context.Context, f func()) {
	h := from(ctx)
	if h == nil {
		f()
		return
	}
	h.mu.Lock()
	if h.taken && !h.streamed {
		h.after = append(h.after, f)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	f()
}

// Served is called by the caller once its ServeHTTP has returned. It
// reports whether the handler took the Handoff: if so the response goes
// on without the caller, and onEnd will run (now, if it has ended
// already); if not, the response is complete.
func (h *Handoff) Served() bool {
	h.mu.Lock()
	h.served = true
	taken, end := h.taken, h.streamed
	h.mu.Unlock()
	if end {
		h.onEnd()
	}
	return taken
}
