package registrytest

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
)

// Run runs a controller as the server does, as its own identity, until
// the test ends. Then it cancels the controller's context, waits for run
// to return, and fails the test if a goroutine running code of the
// packages named (import paths) is still there a moment later: the server
// stops the stores a controller reads once its Run has returned. Tests
// that use it for the same packages do not run in parallel: one's check
// would see the other's goroutines.
func Run(t testing.TB, as pipeline.User, run func(context.Context), packages ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(registry.WithUser(ctx, as))
	}()
	// Registered after the registry's own cleanup, this runs before it.
	t.Cleanup(func() {
		cancel()
		<-done
		var left []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if left = goroutinesIn(packages); len(left) == 0 {
				return
			}
		}
		t.Errorf("%d of %s's goroutines outlived its Run, e.g.:\n%s", len(left), as.Name, left[0])
	})
}

// goroutinesIn is the stack of each goroutine that has a frame in one of
// the packages (a frame names its function as path.Func, or path.(*T).M).
func goroutinesIn(packages []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for _, p := range packages {
			if strings.Contains(g, "\n"+p+".") || strings.Contains(g, "created by "+p+".") {
				found = append(found, g)
				break
			}
		}
	}
	return found
}
