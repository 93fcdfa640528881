package terminal

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"mvdan.cc/sh/v3/interp"

	"github.com/kubelab/kubelab/web/i18n"
)

// A line's etcdctl runs in the server, where the member's client is, and
// the command's process only relays it: the child sends etcdctl's words
// over a socket of its command's own, which exists in local mode only,
// and the server runs its read-only etcdctl (etcdctl.go) on them, sending
// back stdout and stderr as they come, then the exit status. So etcdctl
// takes part in pipes and loops like the shell's other programs (the
// lesson's `etcdctl get ... | head -c 24 | od -c`), while a student in a
// class has no way to etcd at all: their commands get no such socket.

const etcdctlPath = "/etcdctl"

// maxEtcdctlRequest bounds the words a child may send.
const maxEtcdctlRequest = 64 << 10

type etcdctlRequest struct {
	Args []string `json:"args"`
}

// Frames of the answer: a kind, a big-endian length, the data.
const (
	frameStdout byte = 'o'
	frameStderr byte = 'e'
	frameExit   byte = 'x'
)

// serveEtcdctl runs the etcdctl a command's child sends, on etcd.
func serveEtcdctl(etcd EtcdReader, lang i18n.Lang) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req etcdctlRequest
		if r.Method != http.MethodPost || r.URL.Path != etcdctlPath ||
			json.NewDecoder(http.MaxBytesReader(w, r.Body, maxEtcdctlRequest)).Decode(&req) != nil {
			http.Error(w, "a terminal command's etcdctl only", http.StatusBadRequest)
			return
		}
		f := &frames{w: w, flush: http.NewResponseController(w)}
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: f.stream(frameStdout), ErrOut: f.stream(frameStderr)}
		code := runEtcdctl(r.Context(), etcd, req.Args, streams, func(rf *refusal) { fmt.Fprintln(streams.ErrOut, say(lang, rf)) })
		_ = f.write(frameExit, []byte(strconv.Itoa(code)))
	})
}

// frames writes framed output, flushed frame by frame, so that a watch's
// events reach the student as they happen.
type frames struct {
	mu    sync.Mutex
	w     io.Writer
	flush *http.ResponseController
}

func (f *frames) write(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var head [5]byte
	head[0] = kind
	binary.BigEndian.PutUint32(head[1:], uint32(len(p)))
	if _, err := f.w.Write(head[:]); err != nil {
		return err
	}
	if _, err := f.w.Write(p); err != nil {
		return err
	}
	return f.flush.Flush()
}

func (f *frames) stream(kind byte) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if err := f.write(kind, p); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// maxFrame bounds one frame the child reads: runEtcdctl writes a value or
// an event at a time, and etcd's values are at most 1.5 MiB.
const maxFrame = 8 << 20

// etcdctl is the shell's etcdctl: it relays the words to the server and
// its answer to the line's streams.
func (sh *shell) etcdctl(ctx context.Context, hc interp.HandlerContext, args []string) error {
	if sh.id.toEtcd == nil {
		fmt.Fprintln(hc.Stderr, say(sh.lang, refuse("etcd.classroom")))
		return interp.ExitStatus(1)
	}
	body, _ := json.Marshal(etcdctlRequest{Args: args})
	client := &http.Client{Transport: sh.id.toEtcd}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://etcd"+etcdctlPath, bytes.NewReader(body))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "etcdctl: %v\n", err)
		return interp.ExitStatus(1)
	}
	defer resp.Body.Close()
	code, err := relayFrames(resp.Body, hc.Stdout, hc.Stderr)
	var written writeFailed
	switch {
	case errors.As(err, &written):
		return writeError(hc, "etcdctl", written.error)
	case err != nil:
		fmt.Fprintf(hc.Stderr, "etcdctl: %v\n", err)
		return interp.ExitStatus(1)
	}
	if code != 0 {
		return interp.ExitStatus(code)
	}
	return nil
}

// writeFailed is a write to the line's streams that failed.
type writeFailed struct{ error }

// relayFrames copies the answer's frames to stdout and stderr until its
// exit status.
func relayFrames(r io.Reader, stdout, stderr io.Writer) (int, error) {
	var head [5]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return 0, fmt.Errorf("the server's answer ended early: %w", err)
		}
		n := binary.BigEndian.Uint32(head[1:])
		if n > maxFrame {
			return 0, errors.New("the server's answer is malformed")
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			return 0, fmt.Errorf("the server's answer ended early: %w", err)
		}
		switch head[0] {
		case frameStdout:
			if _, err := stdout.Write(p); err != nil {
				return 0, writeFailed{err}
			}
		case frameStderr:
			if _, err := stderr.Write(p); err != nil {
				return 0, writeFailed{err}
			}
		case frameExit:
			return strconv.Atoi(string(p))
		default:
			return 0, errors.New("the server's answer is malformed")
		}
	}
}
