//go:build !race

package terminal_test

// raceDetector: see race_on_test.go.
const raceDetector = false
