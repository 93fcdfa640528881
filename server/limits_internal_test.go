package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/adaptive"
)

// A request past the adaptive limit (here 1 mutation, under hard caps of
// 100) is refused with 429 and Retry-After while the admitted one is still
// being served: it does not wait for it, and its handler never runs.
func TestAdaptiveLimitRefusesPastTheEffectiveLimitWithoutQueueing(t *testing.T) {
	// Not parallel: it measures how long requests take.
	in := newInflight(100, 100, 0, 0, false)
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

// Per-user caps count the authenticated user: a student acting as one
// service account after another (kubectl --as) gets no fresh allowance,
// and the refusal says which cap was hit.
func TestPerUserWatchCapCountsTheAuthenticatedUser(t *testing.T) {
	t.Parallel()
	in := newInflight(100, 100, 100, 2, false)
	e := echo.New()
	e.HTTPErrorHandler = (&Server{log: slog.New(slog.DiscardHandler)}).handleError
	e.Use(frontDoorFromHeaders)
	e.Use(limit(in, time.Minute))
	release := make(chan struct{})
	e.GET("/api/*", func(c echo.Context) error {
		c.Response().WriteHeader(http.StatusOK)
		c.Response().Flush()
		<-release
		return nil
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	defer close(release)

	watch := func(real, as string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces/alice/configmaps?watch=1", nil)
		req.Header.Set("X-Real", real)
		req.Header.Set("X-As", as)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for i := range 2 {
		if resp := watch("alice", fmt.Sprintf("system:serviceaccount:alice:sa%d", i)); resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %d: %d", i+1, resp.StatusCode)
		}
	}
	resp := watch("alice", "system:serviceaccount:alice:sa9")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "too many watches open: at most 2 per user (alice)") {
		t.Fatalf("alice's third watch, as another service account: %d %s", resp.StatusCode, body)
	}
	if resp := watch("bob", "bob"); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob is held back by alice's watches: %d", resp.StatusCode)
	}
}

// A student may hold a token of each service account of their namespace
// (on kube's core, kubectl create token mints one), so each would bring a
// fresh allowance of requests in flight and watches: they count as the
// student, as their writes do. Others keep their own names, and requests
// without credentials are counted by address.
func TestLimitKeyCountsAServiceAccountAsItsNamespacesStudent(t *testing.T) {
	for _, tc := range []struct {
		user pipeline.User
		want string
	}{
		{pipeline.User{Name: "alice", Groups: []string{classroom.StudentGroup}}, "alice"},
		{pipeline.User{Name: "system:serviceaccount:alice:builder"}, "alice"},
		{pipeline.User{Name: "instructor", Groups: []string{classroom.InstructorGroup}}, "instructor"},
		{pipeline.Anonymous(), pipeline.AnonymousUser + "@192.0.2.7"},
	} {
		r := httptest.NewRequest("GET", "/api/v1/pods", nil)
		r.RemoteAddr = "192.0.2.7:40000"
		r = r.WithContext(pipeline.WithRequest(r.Context(), &pipeline.Trace{ID: "x"}, tc.user, tc.user))
		if got := limitKey(r); got != tc.want {
			t.Errorf("%s: counted as %q, want %q", tc.user.Name, got, tc.want)
		}
	}
}

// Requests without credentials are counted by address, and together: a
// stranger with several addresses, each within its own share, gets at
// most half the mutating cap, and the signed-in class keeps the rest.
// Here the cap is 8 mutations, each address's share 3 and the strangers'
// 4: two addresses hold 3 and 1, a third address is refused, and a
// student still writes.
func TestStrangersTogetherHoldAtMostHalfTheMutations(t *testing.T) {
	t.Parallel()
	in := newInflight(100, 8, 3, 0, false)
	e := echo.New()
	e.HTTPErrorHandler = (&Server{log: slog.New(slog.DiscardHandler)}).handleError
	e.Use(frontDoorFromHeaders)
	e.Use(limit(in, time.Minute))
	release, entered := make(chan struct{}), make(chan struct{}, 8)
	e.POST("/signin", func(c echo.Context) error {
		entered <- struct{}{}
		<-release
		return c.NoContent(http.StatusSeeOther)
	})
	e.POST("/api/*", func(c echo.Context) error { return c.NoContent(http.StatusCreated) })
	srv := httptest.NewServer(e)
	defer srv.Close()
	send := func(path, from, real string) int {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader("name=x"))
		req.Header.Set("X-From", from)
		req.Header.Set("X-Real", real)
		// A request let in past the limits would wait for release: the
		// client gives up on it, so the test fails rather than hangs.
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var held sync.WaitGroup
	for _, from := range []string{"10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2"} {
		held.Go(func() { send("/signin", from, "") })
		<-entered
	}
	if code := send("/signin", "10.0.0.2", ""); code != http.StatusTooManyRequests {
		t.Errorf("a fifth stranger's request, from an address with 1 in flight: %d, want 429", code)
	}
	if code := send("/signin", "10.0.0.3", ""); code != http.StatusTooManyRequests {
		t.Errorf("a stranger's request from a third address: %d, want 429", code)
	}
	if code := send("/api/v1/namespaces/alice/configmaps", "10.0.0.4", "alice"); code != http.StatusCreated {
		t.Errorf("a student's write beside the strangers' 4: %d, want 201", code)
	}
	close(release)
	held.Wait()
	if code := send("/signin", "10.0.0.3", ""); code != http.StatusSeeOther {
		t.Errorf("a stranger's request once the others ended: %d, want 303", code)
	}
}

// frontDoorFromHeaders does the front door's part for these tests, from
// headers: X-Real is who authenticated (none for a stranger), X-As whom
// the request impersonates (X-Real if none), X-From the address it came
// from (the connection's if none).
func frontDoorFromHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if from := r.Header.Get("X-From"); from != "" {
			r.RemoteAddr = from + ":40000"
		}
		real, as := pipeline.User{Name: r.Header.Get("X-Real")}, pipeline.User{Name: r.Header.Get("X-As")}
		if as.Name == "" {
			as = real
		}
		c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), nil, real, as)))
		return next(c)
	}
}
