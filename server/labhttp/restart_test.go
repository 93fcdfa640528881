package labhttp_test

import (
	"context"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

// Progress is in etcd: a restarted server shows it, and goes on checking
// the student's steps (it remembers who had started a lab).
func TestProgressSurvivesRestart(t *testing.T) {
	// Not parallel: it stops and restarts a server on the same data
	// directory, whose etcd must start within its timeout.
	dir := t.TempDir()
	sameDir := func(c *server.Config) { classroomMode(c); c.DataDir = dir }
	first := kubelabtest.Start(t, sameDir)
	alice := student(t, first, "alice")
	alice.start("discovery")
	if resp, body := alice.get("/apis"); resp.StatusCode != 200 {
		t.Fatalf("/apis: HTTP %d: %s", resp.StatusCode, body)
	}
	alice.waitPassed("discovery", "groups")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	second := kubelabtest.Start(t, sameDir)
	alice.lab = second
	v := alice.view("discovery")
	if !v.Started || v.Steps[0].State != labhttp.StatePassed || v.Steps[1].State != labhttp.StateCurrent {
		t.Fatalf("after the restart: %+v", v)
	}
	if resp, body := alice.get("/openapi/v3"); resp.StatusCode != 200 {
		t.Fatalf("/openapi/v3: HTTP %d: %s", resp.StatusCode, body)
	}
	alice.waitPassed("discovery", "openapi")
}
