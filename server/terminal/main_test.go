package terminal_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/server/terminal"
)

// TestMain lets this test binary serve as a terminal command's child
// process, as kubelab's binary does (Config.Processes).
func TestMain(m *testing.M) {
	terminal.RunCommandIfAsked()
	os.Exit(m.Run())
}
