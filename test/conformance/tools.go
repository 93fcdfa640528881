//go:build tools

// Package conformance pins the e2e suite's package, so that `go mod tidy`
// keeps what `go test -c k8s.io/kubernetes/test/e2e` needs.
package conformance

import _ "k8s.io/kubernetes/test/e2e"
