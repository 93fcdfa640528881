package terminal_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/server/terminal"
)

// TestMain lets this test binary serve as a terminal command's child
// process, as kubelab's binary does (Config.Processes).
//
// It is also BenchmarkAnotherStudentDuringAttacks's attacker, in a process
// of its own.
func TestMain(m *testing.M) {
	terminal.RunCommandIfAsked()
	if name := os.Getenv(attackerEnv); name != "" {
		os.Exit(attackerMain(name, os.Getenv(attackerURLEnv)))
	}
	os.Exit(m.Run())
}
