//go:build !cgo || !linux

package terminal

// setThreadStacks does nothing: without cgo the Go runtime gives each
// thread a small stack of its own (see the cgo build's).
func setThreadStacks(int) error { return nil }

// threadStacks is the stack new threads get, 0 if the runtime chooses.
func threadStacks() int { return 0 }
