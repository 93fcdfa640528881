package webui_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestOnOneServer runs, side by side on one server, the tests that only
// read what a new server holds, or write only objects of their own in a
// namespace of their own that no other test lists, watches or counts:
// starting a server costs more than most of them. A test that writes to
// the seeded namespaces, watches the tracer (which shows every request),
// times the watch cache's window or compares etcd revisions starts a
// server of its own.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	for _, test := range []struct {
		name string
		run  func(*testing.T, *kubelabtest.Lab)
	}{
		{"Pages", testPages},
		{"RunItLiveSaysRawEquivalent", testRunItLiveSaysRawEquivalent},
		{"TimelineLaneWatchesAsTheBrowsersUser", testTimelineLaneWatchesAsTheBrowsersUser},
		{"InspectorLinksToTheStoredVersion", testInspectorLinksToTheStoredVersion},
		{"PageWeight", testPageWeight},
		{"PagesAreServedCompressed", testPagesAreServedCompressed},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			test.run(t, lab)
		})
	}
}
