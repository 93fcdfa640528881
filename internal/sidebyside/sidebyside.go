// Package sidebyside runs a package's read-mostly tests side by side on
// one server they share, whatever kind of server that is (a whole
// kubelab, the API alone): for tests that each cost less than starting a
// server.
package sidebyside

import "testing"

// Run runs each test as a parallel subtest of t, named by its key, on
// server. A test run so reads only what a new server holds, or writes
// only what no other test of the group lists, watches or counts.
func Run[S any](t *testing.T, server S, tests map[string]func(*testing.T, S)) {
	t.Helper()
	for name, run := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, server)
		})
	}
}
