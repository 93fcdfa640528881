package webui_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/internal/sidebyside"
)

// TestOnOneAPI runs, side by side on the API behind the front door with
// the web UI on it, the tests that only read what a new API holds, or
// write only objects of their own in a namespace of their own that no
// other test lists, watches or counts: starting the API costs more than
// most of them.
func TestOnOneAPI(t *testing.T) {
	t.Parallel()
	sidebyside.Run(t, startAPI(t), map[string]func(*testing.T, *apitest.Server){
		"Pages":                                testPages,
		"RunItLiveSaysRawEquivalent":           testRunItLiveSaysRawEquivalent,
		"InspectorLinksToTheStoredVersion":     testInspectorLinksToTheStoredVersion,
		"PageWeight":                           testPageWeight,
		"TimelineLaneWatchesAsTheBrowsersUser": testTimelineLaneWatchesAsTheBrowsersUser,
	})
}

// TestOnOneServer runs, side by side on one whole server, the tests of
// what the server adds to the web UI (compression, the other packages'
// pages) that only read what a new server holds. A test that writes to
// the seeded namespaces, watches the tracer (which shows every request),
// times the watch cache's window or compares etcd revisions starts a
// server or an API of its own.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	sidebyside.Run(t, kubelabtest.Start(t), map[string]func(*testing.T, *kubelabtest.Lab){
		"PagesWithTheServer":       testPagesWithTheServer,
		"PagesAreServedCompressed": testPagesAreServedCompressed,
	})
}
