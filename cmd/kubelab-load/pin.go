package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinning is the -pin flag of overload: "server:client" CPU lists, such
// as "0:1" or "0-1:2-3", so that the load command's own CPU does not delay
// the server's answers. The server inherits its CPUs at start (and sizes
// GOMAXPROCS from them, as Go does at start); the load command then moves
// itself to the client's.
type pinning struct{ server, client unix.CPUSet }

func parsePin(s string) (*pinning, error) {
	if s == "" {
		return nil, nil
	}
	srv, cli, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("-pin %q: want server CPUs:client CPUs, such as 0:1", s)
	}
	p := &pinning{}
	for _, x := range []struct {
		list string
		set  *unix.CPUSet
	}{{srv, &p.server}, {cli, &p.client}} {
		if err := parseCPUList(x.list, x.set); err != nil {
			return nil, fmt.Errorf("-pin %q: %w", s, err)
		}
	}
	return p, nil
}

// parseCPUList reads taskset's list format: 0,2-3.
func parseCPUList(list string, set *unix.CPUSet) error {
	set.Zero()
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= runtime.NumCPU()*64 {
			return fmt.Errorf("bad CPU list %q", list)
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return nil
}

// pinSelf sets every thread of this process to the CPUs in set (threads
// started later inherit it from the thread that starts them).
func pinSelf(set unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pinning thread %d: %w", tid, err)
		}
	}
	return nil
}

// cpus is a set's CPUs as a list, for the report.
func cpus(set unix.CPUSet) string {
	var l []string
	for c := range 1024 {
		if set.IsSet(c) {
			l = append(l, strconv.Itoa(c))
		}
	}
	return strings.Join(l, ",")
}
