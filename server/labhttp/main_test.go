package labhttp_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestMain runs four tests at a time: most start a server of their own and
// then wait, on a browser, on kubectl, on a step the server checks in the
// background, so on two cores four side by side take less time than two.
func TestMain(m *testing.M) {
	os.Exit(kubelabtest.RunParallel(m, 4))
}
