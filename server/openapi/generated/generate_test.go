package generated

import (
	"path/filepath"
	"testing"

	"github.com/kubelab/kubelab/internal/gentest"
)

// TestGeneratedIsUpToDate reruns generate.sh into a temporary directory and
// compares: a k8s.io/api or kube-openapi bump, or a new input package, must
// come with a regenerated file. The generator is a go.mod tool, so this runs
// offline once `go mod download` has fetched it (.ci/run does); it takes a
// few seconds, so -short skips it.
func TestGeneratedIsUpToDate(t *testing.T) {
	gentest.UpToDate(t, filepath.Join("..", "generate.sh"), "zz_generated.openapi.go", "run `go generate ./server/openapi/...`")
}
