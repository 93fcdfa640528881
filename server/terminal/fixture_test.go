package terminal_test

import (
	"log/slog"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/server/terminal"
)

// served is where a test dials the terminal: the terminal over the API
// alone (startTerminal), or a whole kubelab (kubelabtest) for what needs
// the request pipeline: sign-in, RBAC, the traces.
type served interface {
	URL() string
}

// startTerminal serves the terminal as the whole server wires it in local
// mode, on the API's own router behind kubelab's front door (its router
// serves the commands' requests, its etcd is what etcdctl reads, its
// kubeconfig is the one the page shows): what the terminal's own policy
// decides, without a whole kubelab's start. The local user is anonymous
// and cluster-admin, as in local mode; each request is authorized and
// traced. Options tune the Config.
func startTerminal(t testing.TB, options ...func(*terminal.Config)) *apitest.Server {
	t.Helper()
	api := apitest.Start(t, func(c *apitest.Config) { c.Pipeline = true })
	cfg := terminal.Config{Router: api.Echo(), Etcd: api.EtcdClient(), Kubeconfig: api.KubeconfigPath(),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	for _, o := range options {
		o(&cfg)
	}
	term := terminal.Install(api.Echo(), cfg)
	// Cleanups run last first: the commands end before the API stops and
	// its listener closes, so that a watch left running does not hold
	// Close up.
	t.Cleanup(term.Close)
	return api
}
