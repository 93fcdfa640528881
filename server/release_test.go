package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/server"
)

// cancelOn is a log handler that cancels a context when a record with the
// given message is logged: a way to stop New at a known step, as a Ctrl-C
// during start-up would.
type cancelOn struct {
	slog.Handler
	msg    string
	cancel context.CancelFunc
}

func (h cancelOn) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.cancel()
	}
	return h.Handler.Handle(ctx, r)
}

func (h cancelOn) WithAttrs(as []slog.Attr) slog.Handler {
	return cancelOn{h.Handler.WithAttrs(as), h.msg, h.cancel}
}

func (h cancelOn) WithGroup(g string) slog.Handler {
	return cancelOn{h.Handler.WithGroup(g), h.msg, h.cancel}
}

// TestNewReleasesEverythingWhenItFails: a New that fails part-way, early
// (the HTTPS port is taken, once etcd runs) or late (start-up is stopped
// once the controllers, informers, watch caches, aggregator and CRD
// controller run), leaves no goroutine behind and unlocks etcd's data dir,
// so that a second New on it starts.
func TestNewReleasesEverythingWhenItFails(t *testing.T) {
	// Not parallel: goleak would count the other tests' goroutines as ours.
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, cfg *server.Config, cancel context.CancelFunc)
		wantErr func(error) bool
	}{
		{"secure port taken", func(t *testing.T, cfg *server.Config, _ context.CancelFunc) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { taken.Close() })
			cfg.Classroom = true
			cfg.JoinCode = "join-the-class"
			cfg.ClassName = "k8s-101"
			cfg.SecureListen = taken.Addr().String()
		}, func(err error) bool { return strings.Contains(err.Error(), "--secure-listen") }},
		{"stopped after the controllers started", func(t *testing.T, cfg *server.Config, cancel context.CancelFunc) {
			cfg.Logger = slog.New(cancelOn{cfg.Logger.Handler(), "controllers started", cancel})
		}, func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Goroutines of earlier tests that are still ending are not ours.
			before := goleak.IgnoreCurrent()
			cfg := testConfig(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tc.prepare(t, &cfg, cancel)
			s, err := server.New(ctx, cfg)
			if err == nil {
				s.Shutdown(context.Background())
				t.Fatal("New succeeded, want it to fail")
			}
			if !tc.wantErr(err) {
				t.Fatalf("New failed with %v, not the failure the test set up", err)
			}
			// What New started winds down on its own time (gRPC, HTTP/2,
			// etcd): a loaded machine takes longer than goleak's own half
			// second of retries.
			eventually.Holds(t, fmt.Sprintf("New failed (%v); every goroutine it started ending", err), func() (bool, error) {
				leaked := goleak.Find(before)
				return leaked == nil, leaked
			})

			// The same data dir, now with nothing in the way.
			cfg.Logger = testConfig(t).Logger
			cfg.Classroom, cfg.JoinCode, cfg.ClassName = false, "", ""
			again, err := server.New(context.Background(), cfg)
			if err != nil {
				t.Fatalf("a second New on the same data dir: %v", err)
			}
			if err := again.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
