//go:build race

package labhttp_test

// underRace: this test binary was built with the race detector.
const underRace = true
