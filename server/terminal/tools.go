package terminal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"mvdan.cc/sh/v3/interp"
)

// The shell's text tools, each the everyday subset of its GNU namesake
// that the lesson and a student's one-liners use, in Go: they read only
// through the shell's confined files (see shell.go) and stop at the first
// write that fails, so a pipe whose reader has gone ends them.

// toolFlags is a tool's flag set: GNU-style, errors to the tool's stderr.
func toolFlags(prog string, hc interp.HandlerContext) *pflag.FlagSet {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(hc.Stderr)
	fs.SetInterspersed(true)
	return fs
}

// usage ends a tool whose arguments it cannot read, as GNU tools do.
func usage(hc interp.HandlerContext, prog string, err error) error {
	fmt.Fprintf(hc.Stderr, "%s: %v\n", prog, err)
	return interp.ExitStatus(2)
}

// writeError ends a tool whose output could not be written: a file past
// the scratch directory's size limit says so; a pipe whose reader has
// gone ends the tool quietly, as SIGPIPE would.
func writeError(hc interp.HandlerContext, prog string, err error) error {
	if !errors.Is(err, syscall.EPIPE) {
		fmt.Fprintf(hc.Stderr, "%s: write error: %v\n", prog, unwrapPathError(err))
	}
	return interp.ExitStatus(1)
}

// toolOutput is a tool's stdout, buffered as C's stdio buffers it: by the
// line when it is the terminal itself (the command's own stdout), so that
// `kubectl get pods -w | grep ssa` shows each match as the watch sends it,
// not all of them at Ctrl-C, and by the block into a pipe or a file.
type toolOutput struct {
	*bufio.Writer
	byLine bool
}

func newToolOutput(w io.Writer) *toolOutput {
	return &toolOutput{Writer: bufio.NewWriter(w), byLine: w == io.Writer(os.Stdout)}
}

func (o *toolOutput) Write(p []byte) (int, error) {
	n, err := o.Writer.Write(p)
	if err == nil && o.byLine && bytes.IndexByte(p, '\n') >= 0 {
		err = o.Flush()
	}
	return n, err
}

func (o *toolOutput) WriteString(s string) (int, error) { return o.Write([]byte(s)) }

func (o *toolOutput) WriteByte(c byte) error {
	_, err := o.Write([]byte{c})
	return err
}

// status is a tool's exit: 0 unless failed.
func status(failed bool) error {
	if failed {
		return interp.ExitStatus(1)
	}
	return nil
}

// lines calls each with every line of r, its newline included; each
// returns false to stop reading.
func lines(r io.Reader, each func(line string) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" && !each(line) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func runCat(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	failed := false
	if _, err := io.Copy(hc.Stdout, sh.inputs(ctx, hc, "cat", args, &failed)); err != nil {
		return writeError(hc, "cat", err)
	}
	return status(failed)
}

// strftime formats t as date(1)'s +FORMAT does, for the directives a
// one-liner uses.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'N':
			fmt.Fprintf(&b, "%09d", t.Nanosecond())
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'n':
			b.WriteByte('\n')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func runDate(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("date", hc)
	utc := fs.BoolP("utc", "u", false, "")
	at := fs.StringP("date", "d", "", "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	t := time.Now()
	if *at != "" {
		secs, err := strconv.ParseInt(strings.TrimPrefix(*at, "@"), 10, 64)
		if err != nil || !strings.HasPrefix(*at, "@") {
			return usage(hc, "date", fmt.Errorf("invalid date %q: this date takes -d @SECONDS", *at))
		}
		t = time.Unix(secs, 0)
	}
	if *utc {
		t = t.UTC()
	}
	format := "%a %b %e %H:%M:%S %Z %Y"
	for _, a := range fs.Args() {
		f, ok := strings.CutPrefix(a, "+")
		if !ok {
			return usage(hc, "date", fmt.Errorf("invalid argument %q: this date takes +FORMAT", a))
		}
		format = f
	}
	fmt.Fprintln(hc.Stdout, strftime(t, format))
	return nil
}

func runSeq(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("seq", hc)
	sep := fs.StringP("separator", "s", "\n", "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	nums := fs.Args()
	first, incr := "1", "1"
	var last string
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, incr, last = nums[0], nums[1], nums[2]
	default:
		return usage(hc, "seq", errors.New("usage: seq [FIRST [INCREMENT]] LAST"))
	}
	var v [3]float64
	for i, s := range []string{first, incr, last} {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return usage(hc, "seq", fmt.Errorf("invalid floating point argument: %q", s))
		}
		v[i] = f
	}
	if v[1] == 0 {
		return usage(hc, "seq", errors.New("invalid Zero increment value"))
	}
	out := newToolOutput(hc.Stdout)
	for x, i := v[0], 0; (v[1] > 0 && x <= v[2]) || (v[1] < 0 && x >= v[2]); x, i = v[0]+float64(i+1)*v[1], i+1 {
		if i > 0 {
			out.WriteString(*sep)
		}
		if _, err := out.WriteString(strconv.FormatFloat(x, 'f', -1, 64)); err != nil {
			return writeError(hc, "seq", err)
		}
		if ctx.Err() != nil {
			return interp.ExitStatus(1)
		}
	}
	out.WriteString("\n")
	if err := out.Flush(); err != nil {
		return writeError(hc, "seq", err)
	}
	return nil
}

func runSleep(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	if len(args) == 0 {
		return usage(hc, "sleep", errors.New("missing operand"))
	}
	var total time.Duration
	for _, a := range args {
		unit := time.Second
		switch {
		case strings.HasSuffix(a, "s"):
			a = strings.TrimSuffix(a, "s")
		case strings.HasSuffix(a, "m"):
			a, unit = strings.TrimSuffix(a, "m"), time.Minute
		case strings.HasSuffix(a, "h"):
			a, unit = strings.TrimSuffix(a, "h"), time.Hour
		}
		f, err := strconv.ParseFloat(a, 64)
		if err != nil || f < 0 {
			return usage(hc, "sleep", fmt.Errorf("invalid time interval %q", a))
		}
		total += time.Duration(f * float64(unit))
	}
	select {
	case <-time.After(total):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func runBase64(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("base64", hc)
	decode := fs.BoolP("decode", "d", false, "")
	wrap := fs.IntP("wrap", "w", 76, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	failed := false
	data, err := io.ReadAll(sh.inputs(ctx, hc, "base64", fs.Args(), &failed))
	if err != nil {
		return interp.ExitStatus(1)
	}
	if *decode {
		clean := strings.Join(strings.Fields(string(data)), "")
		b, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return usage(hc, "base64", errors.New("invalid input"))
		}
		hc.Stdout.Write(b)
		return status(failed)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	out := newToolOutput(hc.Stdout)
	for *wrap > 0 && len(enc) > *wrap {
		out.WriteString(enc[:*wrap] + "\n")
		enc = enc[*wrap:]
	}
	out.WriteString(enc + "\n")
	if out.Flush() != nil {
		return interp.ExitStatus(1)
	}
	return status(failed)
}

// runOd dumps its input as od(1) does: -c as characters (C escapes, octal
// for other bytes), -b as octal bytes, and by default as octal two-byte
// words; 16 bytes a line after the offset in octal, and a line the same
// as the one before as "*" unless -v.
func runOd(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("od", hc)
	chars := fs.BoolP("chars", "c", false, "")
	octalBytes := fs.BoolP("octal-bytes", "b", false, "")
	verbose := fs.BoolP("output-duplicates", "v", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	failed := false
	in := bufio.NewReader(sh.inputs(ctx, hc, "od", fs.Args(), &failed))
	format := func(line []byte) string {
		var b strings.Builder
		switch {
		case *chars:
			for _, c := range line {
				b.WriteString(fmt.Sprintf("%4s", odChar(c)))
			}
		case *octalBytes:
			for _, c := range line {
				fmt.Fprintf(&b, " %03o", c)
			}
		default:
			for i := 0; i < len(line); i += 2 {
				w := uint16(line[i])
				if i+1 < len(line) {
					w |= uint16(line[i+1]) << 8
				}
				fmt.Fprintf(&b, " %06o", w)
			}
		}
		return b.String()
	}
	out := newToolOutput(hc.Stdout)
	line, last := make([]byte, 16), make([]byte, 0, 16)
	starred, off := false, 0
	for {
		n, err := io.ReadFull(in, line)
		switch {
		case n == 0:
		case !*verbose && n == 16 && bytes.Equal(line, last):
			if !starred {
				out.WriteString("*\n")
				starred = true
			}
		default:
			last, starred = append(last[:0], line[:n]...), false
			if _, werr := fmt.Fprintf(out, "%07o%s\n", off, format(line[:n])); werr != nil {
				return writeError(hc, "od", werr)
			}
		}
		off += n
		if err != nil {
			break
		}
	}
	fmt.Fprintf(out, "%07o\n", off)
	if err := out.Flush(); err != nil {
		return writeError(hc, "od", err)
	}
	return status(failed)
}

// odChar is how od -c shows a byte.
func odChar(c byte) string {
	switch c {
	case 0:
		return `\0`
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return fmt.Sprintf("%03o", c)
}

// runLs lists the scratch directory, or the names given: -l adds each
// file's size, -a the names that start with a dot.
func runLs(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("ls", hc)
	long := fs.BoolP("long", "l", false, "")
	all := fs.BoolP("all", "a", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	names := fs.Args()
	if len(names) == 0 {
		names = []string{"."}
	}
	failed := false
	out := newToolOutput(hc.Stdout)
	defer out.Flush()
	show := func(name string, info iofs.FileInfo) {
		if *long {
			fmt.Fprintf(out, "%s %8d %s %s\n", info.Mode(), info.Size(), info.ModTime().Format("Jan _2 15:04"), name)
			return
		}
		fmt.Fprintln(out, name)
	}
	for _, name := range names {
		info, err := sh.stat(ctx, name, false)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "ls: cannot access '%s': %v\n", name, unwrapPathError(err))
			failed = true
			continue
		}
		if !info.IsDir() {
			show(name, info)
			continue
		}
		entries, err := sh.readDir(ctx, name)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "ls: cannot open directory '%s': %v\n", name, unwrapPathError(err))
			failed = true
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && !*all {
				continue
			}
			if info, err := e.Info(); err == nil {
				show(e.Name(), info)
			}
		}
	}
	return status(failed)
}

// runRm removes files of the scratch directory; -f says nothing of those
// that are not there.
func runRm(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("rm", hc)
	force := fs.BoolP("force", "f", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	if len(fs.Args()) == 0 && !*force {
		return usage(hc, "rm", errors.New("missing operand"))
	}
	failed := false
	for _, name := range fs.Args() {
		rel, err := sh.inScratch(ctx, "remove", name)
		if err == nil {
			var info iofs.FileInfo
			if info, err = sh.scratch.Lstat(rel); err == nil && info.IsDir() {
				err = errors.New("Is a directory")
			} else if err == nil {
				err = sh.scratch.Remove(rel)
			}
		}
		if err != nil && !(*force && errors.Is(err, iofs.ErrNotExist)) {
			fmt.Fprintf(hc.Stderr, "rm: cannot remove '%s': %v\n", name, unwrapPathError(err))
			failed = true
		}
	}
	return status(failed)
}
