package commands_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/server/terminal"
)

// TestMain lets this test binary serve as a terminal command's child
// process, as kubelab's binary does: the commands run through the page's
// terminal run in processes of their own, as kubelab runs them.
func TestMain(m *testing.M) {
	terminal.RunCommandIfAsked()
	os.Exit(m.Run())
}
