package terminal

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// threadsEnv marks the test's own process started as a command would be.
const threadsEnv = "KUBELAB_TEST_THREADS_IN_A_COMMAND"

// TestThreadsFitACommandsAddressSpace: a command's process, under the
// default memory limit (256 MiB), starts 40 more threads, as a line's
// blocked system calls do, and still has room for 64 MiB of heap. Built with cgo, each thread
// took an 8 MiB stack and, once it called malloc, a 64 MiB arena, all of
// it counted by RLIMIT_AS: a line with four blocked writers ended its own
// process with "out of memory", and a kubectl apply under load did too.
func TestThreadsFitACommandsAddressSpace(t *testing.T) {
	if os.Getenv(threadsEnv) == "1" {
		threadsInACommand(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestThreadsFitACommandsAddressSpace$", "-test.v")
	cmd.Env = append(commandEnvironment(t.TempDir()), threadsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the command's process: %v\n%s", err, out)
	}
	t.Logf("the command's process, with the default thread stack %d KiB:\n%s", threadStacks()>>10, out)
}

func threadsInACommand(t *testing.T) {
	if err := setThreadStacks(commandThreadStack); err != nil {
		t.Fatal(err)
	}
	if err := limitSelf(DefaultLimits.Memory, 60, maxScratchFile); err != nil {
		t.Fatal(err)
	}
	// Each goroutine holds its thread while it waits, as one blocked in
	// a system call does: the next needs a thread of its own.
	hold := make(chan struct{})
	defer close(hold)
	started := make(chan struct{})
	for range 40 {
		go func() {
			runtime.LockOSThread()
			started <- struct{}{}
			<-hold
		}()
		<-started
	}
	heap := make([]byte, 64<<20)
	for i := range heap {
		heap[i] = 1
	}
	t.Logf("40 threads more and 64 MiB of heap under a %d MiB limit; new threads' stacks %d KiB", DefaultLimits.Memory>>20, threadStacks()>>10)
}
