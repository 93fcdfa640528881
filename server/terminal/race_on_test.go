//go:build race

package terminal_test

// raceDetector says whether this test binary runs under the race
// detector, whose runtime cannot start within RLIMIT_AS: its shadow
// memory needs address space far beyond the limit, so a command's
// memory limit ends it with another fatal error than "out of memory".
const raceDetector = true
