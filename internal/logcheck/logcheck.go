// Package logcheck is the "log" health check of kube-apiserver's /healthz,
// /livez and /readyz for a slog logger: it fails when writing a log record
// has been stuck for a while (stderr piped to a reader that stopped
// reading, a full disk), because a server that cannot log blocks every
// request that tries to.
package logcheck

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// StuckAfter is how long a log write may go without any write completing
// before the check fails.
const StuckAfter = time.Minute

// Watcher tracks the log writes of the handlers it wraps.
type Watcher struct {
	now func() time.Time
	// writing counts records being handled; busySince is when it last
	// went from none to some, lastDone when a record last completed
	// (unix nanoseconds). A stuck writer moves neither.
	writing   atomic.Int64
	busySince atomic.Int64
	lastDone  atomic.Int64
}

// New returns a Watcher on the wall clock.
func New() *Watcher { return &Watcher{now: time.Now} }

// Wrap returns h, watched: every record it handles is tracked.
func (w *Watcher) Wrap(h slog.Handler) slog.Handler { return handler{w: w, next: h} }

// Check fails while a log write has been in progress for StuckAfter with
// no other write completing in the meantime.
func (w *Watcher) Check(context.Context) error {
	if w.writing.Load() == 0 {
		return nil
	}
	since := max(w.busySince.Load(), w.lastDone.Load())
	if stuck := w.now().Sub(time.Unix(0, since)); stuck > StuckAfter {
		return fmt.Errorf("logging blocked: no log write has completed for %s", stuck.Round(time.Second))
	}
	return nil
}

func (w *Watcher) begin() {
	if w.writing.Add(1) == 1 {
		w.busySince.Store(w.now().UnixNano())
	}
}

func (w *Watcher) end() {
	w.lastDone.Store(w.now().UnixNano())
	w.writing.Add(-1)
}

type handler struct {
	w    *Watcher
	next slog.Handler
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	h.w.begin()
	defer h.w.end()
	return h.next.Handle(ctx, r)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return handler{w: h.w, next: h.next.WithAttrs(attrs)}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{w: h.w, next: h.next.WithGroup(name)}
}
