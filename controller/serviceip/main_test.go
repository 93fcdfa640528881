package serviceip_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any leaves a goroutine running:
// a controller, its informers or the registry under it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
