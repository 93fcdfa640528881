// Package eventually waits in tests for what happens in the background (a
// controller's work, a cache catching up), on its own so that a test of
// one component need not link a whole kubelab to wait.
package eventually

import (
	"testing"
	"time"
)

// Holds polls cond until it holds, failing the test after 20 seconds with
// what was awaited and cond's last error.
func Holds(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	HoldsWithin(t, 20*time.Second, what, cond)
}

// HoldsWithin is Holds with a bound of the caller's: for work that takes
// longer on a busy machine, such as a whole control plane's.
func HoldsWithin(t testing.TB, bound time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened (last error: %v)", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
