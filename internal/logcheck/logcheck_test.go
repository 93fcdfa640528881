package logcheck

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingWriter blocks every write until released.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.entered <- struct{}{}
	<-b.release
	return len(p), nil
}

func TestCheckFailsOnlyWhileAWriteIsStuck(t *testing.T) {
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }

	w := &Watcher{now: now}
	out := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	log := slog.New(w.Wrap(slog.NewTextHandler(out, nil))).With("component", "test")

	if err := w.Check(context.Background()); err != nil {
		t.Fatalf("idle logger: %v", err)
	}
	done := make(chan struct{})
	go func() { log.Info("hello"); close(done) }()
	<-out.entered
	advance(StuckAfter / 2)
	if err := w.Check(context.Background()); err != nil {
		t.Fatalf("a write in progress for %s is not stuck yet: %v", StuckAfter/2, err)
	}
	advance(StuckAfter)
	err := w.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "logging blocked") {
		t.Fatalf("a write stuck for %s: got %v, want a logging blocked error", 3*StuckAfter/2, err)
	}
	out.release <- struct{}{}
	<-done
	if err := w.Check(context.Background()); err != nil {
		t.Fatalf("after the write completed: %v", err)
	}
	// Long idle, then a fresh write: it is timed from its own start.
	advance(10 * StuckAfter)
	done = make(chan struct{})
	go func() { log.Info("again"); close(done) }()
	<-out.entered
	if err := w.Check(context.Background()); err != nil {
		t.Fatalf("a write that just started after a long idle: %v", err)
	}
	close(out.release)
	<-done
}

func TestWrapKeepsTheHandlersBehaviour(t *testing.T) {
	var sb strings.Builder
	w := New()
	log := slog.New(w.Wrap(slog.NewTextHandler(&sb, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.WithGroup("g").With("k", "v").Warn("shown")
	log.Info("hidden")
	if got := sb.String(); !strings.Contains(got, "msg=shown g.k=v") || strings.Contains(got, "hidden") {
		t.Fatalf("output %q: want the warning with its group and attribute, and no info line", got)
	}
	if w.writing.Load() != 0 {
		t.Fatalf("writing = %d after all writes returned", w.writing.Load())
	}
}
