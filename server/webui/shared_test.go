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
	kubelabtest.RunShared(t, lab,
		kubelabtest.Shared{Name: "Pages", Run: testPages},
		kubelabtest.Shared{Name: "RunItLiveSaysRawEquivalent", Run: testRunItLiveSaysRawEquivalent},
		kubelabtest.Shared{Name: "TimelineLaneWatchesAsTheBrowsersUser", Run: testTimelineLaneWatchesAsTheBrowsersUser},
		kubelabtest.Shared{Name: "InspectorLinksToTheStoredVersion", Run: testInspectorLinksToTheStoredVersion},
		kubelabtest.Shared{Name: "PageWeight", Run: testPageWeight},
		kubelabtest.Shared{Name: "PagesAreServedCompressed", Run: testPagesAreServedCompressed},
	)
}
