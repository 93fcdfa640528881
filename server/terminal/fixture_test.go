package terminal_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/terminal"
)

// served is where a test dials the terminal: the terminal over the API
// alone (startTerminal), or a whole kubelab (kubelabtest) for what needs
// the request pipeline: sign-in, RBAC, the traces.
type served interface {
	URL() string
}

// terminalServer is the terminal in local mode, served on a port of its
// own, running its commands against the API alone.
type terminalServer struct{ url string }

// URL is the terminal's origin: its page and websocket, and the Origin a
// page of it sends.
func (s *terminalServer) URL() string { return s.url }

// startTerminal serves the terminal as the whole server wires it in local
// mode (its router serves the commands' requests, its etcd is what
// etcdctl reads, its kubeconfig is the one the page shows), over the API
// alone: what the terminal's own policy decides, without a whole
// kubelab's start. Every command's request is the anonymous user's and is
// allowed, as in local mode; none is traced. Options tune the Config.
func startTerminal(t testing.TB, options ...func(*terminal.Config)) *terminalServer {
	t.Helper()
	api := apitest.Start(t)
	cfg := terminal.Config{Router: api.Echo(), Etcd: api.EtcdClient(), Kubeconfig: api.KubeconfigPath(),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	for _, o := range options {
		o(&cfg)
	}
	e := echo.New()
	// The websocket's request names the browser's user, as the front door
	// names one that sent no credentials: the anonymous user, whom the
	// terminal greets and counts its caps against.
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		anonymous := pipeline.Anonymous()
		return func(c echo.Context) error {
			r := c.Request()
			c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), nil, anonymous, anonymous)))
			return next(c)
		}
	})
	term := terminal.Install(e, cfg)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	// Cleanups run last first: the commands end before the server closes,
	// so that a watch left running does not hold Close up.
	t.Cleanup(term.Close)
	return &terminalServer{url: srv.URL}
}
