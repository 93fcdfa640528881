// Package classroom_test is the hostile class: real kubelab processes,
// the real kubectl and etcdctl, and Chromium where a web page is the
// attacker, trying what a student, a web page a student opens, or anyone
// on the classroom network would try. Each test names the finding it
// closes; docs/SECURITY.md lists them with what each proves.
package classroom_test

import (
	"os"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabproc"
)

// TestMain removes the kubelab binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	kubelabproc.RemoveBinary()
	os.Exit(code)
}
