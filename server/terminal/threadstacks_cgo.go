//go:build cgo && linux

package terminal

/*
#define _GNU_SOURCE
#include <pthread.h>

// set_default_thread_stack makes size the stack of threads created from
// now on whose creator asks for the default, as the Go runtime's do.
static int set_default_thread_stack(size_t size) {
	pthread_attr_t attr;
	int err = pthread_getattr_default_np(&attr);
	if (err != 0) {
		return err;
	}
	err = pthread_attr_setstacksize(&attr, size);
	if (err == 0) {
		err = pthread_setattr_default_np(&attr);
	}
	pthread_attr_destroy(&attr);
	return err;
}

static size_t default_thread_stack(void) {
	pthread_attr_t attr;
	size_t size = 0;
	if (pthread_getattr_default_np(&attr) == 0) {
		pthread_attr_getstacksize(&attr, &size);
		pthread_attr_destroy(&attr);
	}
	return size;
}
*/
import "C"

import "syscall"

// setThreadStacks makes size the stack of the threads the Go runtime
// starts from now on. Built with cgo, it starts them with pthread_create
// and glibc's default stack, 8 MiB of address space each (RLIMIT_STACK):
// under a command's RLIMIT_AS, some thirty threads blocked in system
// calls then left no room for its heap. Without cgo the runtime gives
// each thread a small stack of its own, and this does nothing.
func setThreadStacks(size int) error {
	if err := C.set_default_thread_stack(C.size_t(size)); err != 0 {
		return syscall.Errno(err)
	}
	return nil
}

// threadStacks is the stack new threads get, 0 if the runtime chooses.
func threadStacks() int { return int(C.default_thread_stack()) }
