package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/server/adaptive"
)

// A request past the adaptive limit (here 1 mutation, under hard caps of
// 100) is refused with 429 and Retry-After while the admitted one is still
// being served: it does not wait for it, and its handler never runs.
func TestAdaptiveLimitRefusesPastTheEffectiveLimitWithoutQueueing(t *testing.T) {
	in := newInflight(100, 100, 0, false)
	in.adaptiveMutations = adaptive.New(adaptive.Config{Min: 1, Max: 100, Initial: 1})
	e := echo.New()
	e.HTTPErrorHandler = (&Server{log: slog.New(slog.DiscardHandler)}).handleError
	e.Use(limit(in, time.Minute))
	var entered atomic.Int32
	hold, held := make(chan struct{}), make(chan struct{})
	e.Any("/*", func(c echo.Context) error {
		if entered.Add(1) == 1 {
			close(held)
			<-hold
		}
		return c.NoContent(http.StatusCreated)
	})
	srv := httptest.NewServer(e)
	defer srv.Close()

	first := make(chan int)
	go func() {
		resp, err := http.Post(srv.URL+"/x", "application/json", strings.NewReader("{}"))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-held

	resp, err := http.Post(srv.URL+"/x", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "Too many requests, please try again later.") {
		t.Fatalf("past the adaptive limit: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := entered.Load(); n != 1 {
		t.Fatalf("%d handlers entered, want only the admitted one", n)
	}
	if s := in.adaptiveMutations.Stats(); s.Inflight != 1 || s.Refused != 1 {
		t.Fatalf("adaptive limit %+v, want 1 in flight, 1 refused", s)
	}
	// Reads have their own limit (none here) and pass.
	if resp, err := http.Get(srv.URL + "/x"); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("a read while mutations are at their limit: %v %v", resp, err)
	}

	close(hold)
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("the admitted request: %d", code)
	}
	if s := in.adaptiveMutations.Stats(); s.Inflight != 0 {
		t.Fatalf("%d in flight after it finished", s.Inflight)
	}
	resp, err = http.Post(srv.URL+"/x", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("after the slot was released: %d", resp.StatusCode)
	}
}
