package kubeapi_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestMain runs four tests at a time: each starts a server of its own and
// most wait on watches that end by timeoutSeconds, so on two cores four
// side by side take about half as long as two.
func TestMain(m *testing.M) {
	os.Exit(kubelabtest.RunParallel(m, 4))
}
