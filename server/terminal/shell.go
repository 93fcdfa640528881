package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/kubelab/kubelab/web/i18n"
)

// The shell of a command's child process (Config.Processes): a line runs
// as a POSIX shell would run it (pipes, $(...), variables, for and while,
// ; and &&, redirections), interpreted in Go by mvdan.cc/sh rather than
// by a system shell, so that three rules hold whatever the line says:
//   - only the programs of tools run, each in Go, in this process;
//   - files are read and written in the session's scratch directory only;
//   - nothing on the network is reached but kubelab's API, as the student
//     (kubectl's requests go through the command's socket).
// The process's own limits bound what a line may use (see child.go).

// tool is one program of the shell's: it reads hc.Stdin, writes
// hc.Stdout and hc.Stderr, and returns nil or interp.ExitStatus.
type tool func(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error

// tools are the programs a line may run. echo, printf, test and the
// other builtins are the interpreter's own.
var tools map[string]tool

func init() {
	tools = map[string]tool{
		"kubectl": (*shell).kubectl, "k": (*shell).kubectl,
		"jq":  runJQ,
		"cat": runCat, "grep": runGrep, "head": runHead, "tail": runTail, "sort": runSort, "uniq": runUniq,
		"wc": runWc, "cut": runCut, "tr": runTr, "date": runDate, "seq": runSeq, "sleep": runSleep, "base64": runBase64, "od": runOd,
		"etcdctl": (*shell).etcdctl,
		"ls":      runLs, "rm": runRm,
	}
}

// toolNames lists tools for the student, sorted.
func toolNames() string {
	var names []string
	for n := range tools {
		if n != "k" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// deniedBuiltins say what they would reveal of the server's files (they
// look names up with os.Stat, past the scratch directory); builtin runs
// them past the call handler.
var deniedBuiltins = map[string]bool{"type": true, "command": true, "hash": true, "builtin": true}

// noTempDir is the interpreter's TMPDIR: a directory that cannot exist.
// The interpreter opens its own temporary files there (process
// substitution's FIFOs, files named sh-interp-*) with os.OpenFile, past
// the open handler, so none may be made at all.
const noTempDir = "/nonexistent/kubelab-tmp"

// prelude runs before each line: PATH stays empty, so that source and
// the interpreter's lookups find nothing on the server's disk.
const prelude = "readonly PATH"

// shell runs one line for one student.
type shell struct {
	id      identity
	lang    i18n.Lang
	scratch *os.Root
	// quota is what the line may still write in the scratch directory.
	quota *scratchQuota
	dir   string
}

// runShell runs line in dir, the session's scratch directory, and returns
// its exit status.
func runShell(ctx context.Context, id identity, lang i18n.Lang, dir, line string, streams genericiooptions.IOStreams) int {
	file, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "kubelab: %v\n", err)
		return 2
	}
	var refused *refusal
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ProcSubst:
			// It makes a FIFO past every handler.
			refused = refuse("shell.procsubst")
		case *syntax.CoprocClause:
			refused = refuse("shell.coproc")
		}
		return refused == nil
	})
	if refused != nil {
		fmt.Fprintln(streams.ErrOut, say(lang, refused))
		return 2
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "kubelab: the scratch directory: %v\n", err)
		return 1
	}
	defer root.Close()
	sh := &shell{id: id, lang: lang, scratch: root, dir: dir}
	sh.quota = newScratchQuota(sh.scratchUse())
	runner, err := interp.New(
		interp.StdIO(streams.In, streams.Out, streams.ErrOut),
		interp.Dir(dir),
		// Nothing of the server's environment; PATH names no directory.
		interp.Env(expand.ListEnviron("HOME="+dir, "PWD="+dir, "TMPDIR="+noTempDir, "PATH=", "LC_ALL=C.UTF-8", "TERM=xterm-256color")),
		interp.OpenHandler(sh.open),
		interp.ReadDirHandler2(sh.readDir),
		interp.StatHandler(sh.stat),
		interp.AccessHandler(sh.access),
		interp.CallHandler(sh.call),
		// Never the default handler, which runs programs from PATH.
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return sh.exec }),
	)
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "kubelab: %v\n", err)
		return 1
	}
	pre, _ := syntax.NewParser().Parse(strings.NewReader(prelude), "")
	if err = runner.Run(ctx, pre); err == nil {
		err = runner.Run(ctx, file)
	}
	var status interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case ctx.Err() != nil:
		return 1
	}
	fmt.Fprintf(streams.ErrOut, "kubelab: %v\n", err)
	return 1
}

// call refuses the builtins that look past the scratch directory.
func (sh *shell) call(ctx context.Context, args []string) ([]string, error) {
	switch {
	case len(args) == 0:
	case deniedBuiltins[args[0]]:
		return append([]string{"\x00denied"}, args...), nil
	case args[0] == "pwd":
		// pwd -P resolves $PWD, which the line may set to any path of
		// the server's.
		return args[:1], nil
	}
	return args, nil
}

// exec runs a tool, or says why not.
func (sh *shell) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	if args[0] == "\x00denied" {
		fmt.Fprintln(hc.Stderr, say(sh.lang, refuse("shell.builtin", args[1])))
		return interp.ExitStatus(126)
	}
	t, ok := tools[args[0]]
	if !ok {
		fmt.Fprintln(hc.Stderr, say(sh.lang, refuse("shell.program", args[0], toolNames())))
		return interp.ExitStatus(127)
	}
	if hc.Stdin == nil {
		hc.Stdin = strings.NewReader("")
	}
	return t(sh, ctx, hc, args[1:])
}

// kubectl runs kubectl in this process, with the policy of the terminal.
func (sh *shell) kubectl(ctx context.Context, hc interp.HandlerContext, args []string) error {
	if r := checkLine(args, true); r != nil {
		fmt.Fprintln(hc.Stderr, say(sh.lang, r))
		return interp.ExitStatus(1)
	}
	streams := genericiooptions.IOStreams{In: hc.Stdin, Out: hc.Stdout, ErrOut: hc.Stderr}
	code := runKubectl(ctx, sh.id, args, hc.Stdin, streams, func(r *refusal) { fmt.Fprintln(hc.Stderr, say(sh.lang, r)) })
	if code != 0 {
		return interp.ExitStatus(code)
	}
	return nil
}

// inScratch is path relative to the scratch directory, or an error if it
// is outside it.
func (sh *shell) inScratch(ctx context.Context, op, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(interp.HandlerCtx(ctx).Dir, path)
	}
	rel, err := filepath.Rel(sh.dir, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &os.PathError{Op: op, Path: path, Err: fs.ErrPermission}
	}
	return rel, nil
}

// A session's scratch directory holds at most scratchFiles files and
// scratchBytes, counted as each line writes (a file rewritten counts
// again until the next line recounts what is there).
const (
	scratchBytes = 16 << 20
	scratchFiles = 256
)

var errScratchFull = fmt.Errorf("the scratch directory is full (%d MiB or %d files): remove files with rm", scratchBytes>>20, scratchFiles)

func (sh *shell) open(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if path == os.DevNull {
		return os.OpenFile(os.DevNull, flag, perm)
	}
	rel, err := sh.inScratch(ctx, "open", path)
	if err != nil {
		return nil, err
	}
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) == 0 {
		return sh.scratch.OpenFile(rel, flag, perm)
	}
	_, statErr := sh.scratch.Lstat(rel)
	if !sh.quota.open(errors.Is(statErr, fs.ErrNotExist)) {
		return nil, &os.PathError{Op: "open", Path: path, Err: errScratchFull}
	}
	f, err := sh.scratch.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, err
	}
	return &quotaFile{f: f, quota: sh.quota}, nil
}

// scratchQuota is what one line may still add to the scratch directory:
// bytes, counted as they are written, and files, as they are made. It is
// taken at the line's start, so writes that began together (background
// jobs) share it.
type scratchQuota struct {
	mu    sync.Mutex
	bytes int64
	files int
}

func newScratchQuota(used int64, files int) *scratchQuota {
	return &scratchQuota{bytes: scratchBytes - used, files: scratchFiles - files}
}

// open says whether a write may begin; a new file takes one of the files.
func (q *scratchQuota) open(newFile bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bytes <= 0 || (newFile && q.files <= 0) {
		return false
	}
	if newFile {
		q.files--
	}
	return true
}

// take takes n bytes, or says there is no room for them.
func (q *scratchQuota) take(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if int64(n) > q.bytes {
		return false
	}
	q.bytes -= int64(n)
	return true
}

// quotaFile is a scratch file open for writing, within the line's quota.
// It does not embed the file: *os.File's ReadFrom would let io.Copy
// write past Write.
type quotaFile struct {
	f     *os.File
	quota *scratchQuota
}

func (q *quotaFile) Read(p []byte) (int, error) { return q.f.Read(p) }
func (q *quotaFile) Close() error               { return q.f.Close() }

func (q *quotaFile) Write(p []byte) (int, error) {
	if !q.quota.take(len(p)) {
		return 0, &os.PathError{Op: "write", Path: q.f.Name(), Err: errScratchFull}
	}
	return q.f.Write(p)
}

// scratchUse is what the scratch directory holds: its files' bytes, and
// how many there are (directories included), counted to the cap at most.
func (sh *shell) scratchUse() (bytes int64, files int) {
	_ = fs.WalkDir(sh.scratch.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil || files > scratchFiles {
			return fs.SkipAll
		}
		if info, err := d.Info(); err == nil && d.Type().IsRegular() {
			bytes += info.Size()
		}
		files++
		return nil
	})
	return bytes, files - 1 // the directory itself is not one of its files
}

func (sh *shell) readDir(ctx context.Context, path string) ([]fs.DirEntry, error) {
	rel, err := sh.inScratch(ctx, "readdir", path)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(sh.scratch.FS(), rel)
}

func (sh *shell) stat(ctx context.Context, path string, followSymlinks bool) (fs.FileInfo, error) {
	rel, err := sh.inScratch(ctx, "stat", path)
	if err != nil {
		return nil, err
	}
	if followSymlinks {
		return sh.scratch.Stat(rel)
	}
	return sh.scratch.Lstat(rel)
}

func (sh *shell) access(ctx context.Context, path string, mode interp.AccessMode) error {
	_, err := sh.stat(ctx, path, true)
	return err
}

// openArg opens a tool's file argument, in the scratch directory; "-" is
// hc.Stdin.
func (sh *shell) openArg(ctx context.Context, hc interp.HandlerContext, name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(hc.Stdin), nil
	}
	rel, err := sh.inScratch(ctx, "open", name)
	if err != nil {
		return nil, err
	}
	return sh.scratch.Open(rel)
}

// inputs is what a tool reads: its file arguments one after another, or
// hc.Stdin without any. It reports a file it cannot open as a tool would,
// and sets failed.
func (sh *shell) inputs(ctx context.Context, hc interp.HandlerContext, prog string, files []string, failed *bool) io.Reader {
	if len(files) == 0 {
		return hc.Stdin
	}
	var readers []io.Reader
	for _, f := range files {
		r, err := sh.openArg(ctx, hc, f)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "%s: %s: %v\n", prog, f, unwrapPathError(err))
			*failed = true
			continue
		}
		readers = append(readers, &closingReader{r})
	}
	return io.MultiReader(readers...)
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// closingReader closes its file once it has been read to the end.
type closingReader struct{ rc io.ReadCloser }

func (c *closingReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if err == io.EOF {
		c.rc.Close()
	}
	return n, err
}
