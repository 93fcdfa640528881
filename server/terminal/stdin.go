package terminal

import (
	"context"
	"io"
	"os"
)

// kubectl reads `-f -` from os.Stdin itself (cli-runtime's FileVisitor
// opens no other stream for "-"), so the one way to hand it its stdin (the
// stdin box, or in a shell's pipeline what comes before it) in process is
// to lend it os.Stdin: a pipe fed from that stdin, for one command at a
// time, restored when the command ends. Only a command whose parsed
// --filename names "-" borrows it; the others never read stdin.
var stdinLease = make(chan struct{}, 1)

// lendStdin makes os.Stdin read from in until release is called. It waits
// for another command's lease to end, or for ctx.
func lendStdin(ctx context.Context, in io.Reader) (release func(), err error) {
	select {
	case stdinLease <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, w, err := os.Pipe()
	if err != nil {
		<-stdinLease
		return nil, err
	}
	saved := os.Stdin
	os.Stdin = r
	go func() {
		// Ends when in does, or once release has closed the pipe's read
		// end and the next write fails.
		_, _ = io.Copy(w, in)
		w.Close()
	}()
	return func() {
		os.Stdin = saved
		r.Close()
		<-stdinLease
	}, nil
}
