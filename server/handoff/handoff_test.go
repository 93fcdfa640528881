package handoff

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// serve plays a caller and a middleware around a handler that takes the
// Handoff with stream (or not), and returns what ran, in order, once the
// response has ended. served is closed once the caller's ServeHTTP has
// returned.
func serve(t *testing.T, take bool, served chan struct{}, stream func()) (taken bool, ran []string) {
	t.Helper()
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); ran = append(ran, s); mu.Unlock() }
	ended := make(chan struct{})
	ctx, h := Offer(context.Background(), func() { note("end"); close(ended) })
	func() { // the middleware
		defer After(ctx, func() { note("middleware") })
		if take { // the handler
			Take(ctx, func() { stream(); note("stream") })
		}
	}()
	taken = h.Served()
	close(served)
	if taken {
		<-ended
	}
	return taken, ran
}

func TestOffered(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		served := make(chan struct{})
		taken, ran := serve(t, true, served, func() { <-served })
		if !taken || !slices.Equal(ran, []string{"stream", "middleware", "end"}) {
			t.Fatalf("taken %v, ran %v", taken, ran)
		}
	})
	t.Run("StreamEndsBeforeTheHandlerReturns", func(t *testing.T) {
		taken, ran := serve(t, true, make(chan struct{}), func() {})
		// The stream may end before or after the middleware defers its
		// work; either way the end comes last.
		if !taken || len(ran) != 3 || ran[2] != "end" {
			t.Fatalf("taken %v, ran %v", taken, ran)
		}
	})
	t.Run("NotTaken", func(t *testing.T) {
		taken, ran := serve(t, false, make(chan struct{}), nil)
		if taken || !slices.Equal(ran, []string{"middleware"}) {
			t.Fatalf("taken %v, ran %v", taken, ran)
		}
	})
}

func TestNotOffered(t *testing.T) {
	if Take(context.Background(), func() { t.Error("stream ran") }) {
		t.Fatal("taken without an offer")
	}
	ran := false
	After(context.Background(), func() { ran = true })
	if !ran {
		t.Fatal("After did not run at once")
	}
}
