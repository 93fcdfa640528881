package webui_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestMain runs four tests at a time: most tests here start a server (a
// whole kubelab, or the API) of their own and then wait, on watches and their
// timeoutSeconds, on kubectl, on a browser, on the watch cache's
// freshness, so on two cores four side by side take far less than one
// after another.
func TestMain(m *testing.M) {
	os.Exit(kubelabtest.RunParallel(m, 4))
}
