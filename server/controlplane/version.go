package controlplane

import (
	"runtime/debug"
	"strings"
	_ "unsafe" // for go:linkname

	"k8s.io/component-base/version"
)

// kube-apiserver's /version reads k8s.io/component-base/version, whose
// values its release build sets with the linker's -X. kubelab is built with
// plain `go build` and `go run`, so they are set here instead, from the
// version of k8s.io/kubernetes this binary was built with: /version then
// says what the code is, v1.37.2, as the real binary does.

//go:linkname gitVersion k8s.io/component-base/version.gitVersion
var gitVersion string

//go:linkname gitMajor k8s.io/component-base/version.gitMajor
var gitMajor string

//go:linkname gitMinor k8s.io/component-base/version.gitMinor
var gitMinor string

//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
var gitTreeState string

func init() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	for _, m := range info.Deps {
		if m.Path != "k8s.io/kubernetes" {
			continue
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
		if len(parts) < 2 {
			return
		}
		gitVersion, gitMajor, gitMinor, gitTreeState = v, parts[0], parts[1], "clean"
		// Get reads the version through a copy made at the package's
		// init, which takes the version it now has (test/kubecore checks
		// what /version says).
		_ = version.SetDynamicVersion(v)
	}
}
