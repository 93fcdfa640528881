package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// The shell's tools that pick lines: grep, head and tail (see tools.go).

// breToERE turns a POSIX basic regular expression into an extended one:
// in a BRE, \( \) \{ \} \| \+ \? are the operators and ( ) { } | + ? are
// characters.
func breToERE(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p) && strings.IndexByte("(){}|+?", p[i+1]) >= 0:
			b.WriteByte(p[i+1])
			i++
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
		case strings.IndexByte("(){}|+?", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func runGrep(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("grep", hc)
	extended := fs.BoolP("extended-regexp", "E", false, "")
	fixed := fs.BoolP("fixed-strings", "F", false, "")
	ignoreCase := fs.BoolP("ignore-case", "i", false, "")
	invert := fs.BoolP("invert-match", "v", false, "")
	count := fs.BoolP("count", "c", false, "")
	number := fs.BoolP("line-number", "n", false, "")
	only := fs.BoolP("only-matching", "o", false, "")
	quiet := fs.BoolP("quiet", "q", false, "")
	word := fs.BoolP("word-regexp", "w", false, "")
	whole := fs.BoolP("line-regexp", "x", false, "")
	patterns := fs.StringArrayP("regexp", "e", nil, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	rest := fs.Args()
	if len(*patterns) == 0 {
		if len(rest) == 0 {
			return usage(hc, "grep", errors.New("no pattern"))
		}
		*patterns, rest = []string{rest[0]}, rest[1:]
	}
	var alts []string
	for _, p := range *patterns {
		switch {
		case *fixed:
			p = regexp.QuoteMeta(p)
		case !*extended:
			p = breToERE(p)
		}
		alts = append(alts, "(?:"+p+")")
	}
	expr := strings.Join(alts, "|")
	if *word {
		expr = `\b(?:` + expr + `)\b`
	}
	if *whole {
		expr = `^(?:` + expr + `)$`
	}
	if *ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return usage(hc, "grep", err)
	}
	failed, matched, n, lineNo := false, false, 0, 0
	out := newToolOutput(hc.Stdout)
	var werr error
	err = lines(sh.inputs(ctx, hc, "grep", rest, &failed), func(line string) bool {
		lineNo++
		text := strings.TrimSuffix(line, "\n")
		if re.MatchString(text) == *invert {
			return true
		}
		matched, n = true, n+1
		switch {
		case *quiet:
			return false
		case *count:
		case *only && !*invert:
			for _, m := range re.FindAllString(text, -1) {
				if *number {
					fmt.Fprintf(out, "%d:", lineNo)
				}
				_, werr = fmt.Fprintln(out, m)
			}
		default:
			if *number {
				fmt.Fprintf(out, "%d:", lineNo)
			}
			_, werr = fmt.Fprintln(out, text)
		}
		return werr == nil
	})
	if *count {
		fmt.Fprintln(out, n)
	}
	if out.Flush() != nil || err != nil || failed {
		return interp.ExitStatus(2)
	}
	if !matched {
		return interp.ExitStatus(1)
	}
	return nil
}

// countArg reads head's and tail's -n or -c value: a count, "+N" (tail:
// from the Nth) or "-N" (head: all but the last N), with GNU's multiplier
// suffixes (`head -c 10G`); a count past the largest int64 is that.
func countArg(s string) (n int64, sign byte, err error) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[0], s[1:]
	}
	digits := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	multiplier, ok := countSuffixes[s[len(digits):]]
	n, err = strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, 0, fmt.Errorf("invalid number: %q", s)
	}
	if n > math.MaxInt64/multiplier {
		return math.MaxInt64, sign, nil
	}
	return n * multiplier, sign, nil
}

// countSuffixes are the multipliers GNU head and tail take after a count.
var countSuffixes = func() map[string]int64 {
	m := map[string]int64{"": 1, "b": 512}
	k, si := int64(1), int64(1)
	for _, p := range "KMGTPE" {
		k, si = k*1024, si*1000
		m[string(p)], m[string(p)+"iB"], m[string(p)+"B"] = k, k, si
	}
	m["kB"] = 1000
	return m
}()

// obsoleteCount turns head -5 and tail -5 into -n 5.
func obsoleteCount(args []string) []string {
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0][1] >= '0' && args[0][1] <= '9' {
		return append([]string{"-n", args[0][1:]}, args[1:]...)
	}
	return args
}

func runHead(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("head", hc)
	nLines := fs.StringP("lines", "n", "10", "")
	nBytes := fs.StringP("bytes", "c", "", "")
	if err := fs.Parse(obsoleteCount(args)); err != nil {
		return usage(hc, fs.Name(), err)
	}
	failed := false
	in := sh.inputs(ctx, hc, "head", fs.Args(), &failed)
	if *nBytes != "" {
		n, sign, err := countArg(*nBytes)
		if err != nil || sign == '-' {
			return usage(hc, "head", fmt.Errorf("invalid number of bytes: %q", *nBytes))
		}
		if _, err := io.CopyN(hc.Stdout, in, n); err != nil && err != io.EOF {
			return interp.ExitStatus(1)
		}
		return status(failed)
	}
	n, sign, err := countArg(*nLines)
	if err != nil {
		return usage(hc, "head", err)
	}
	out := newToolOutput(hc.Stdout)
	var werr error
	if sign == '-' { // all but the last n lines
		var held []string
		err = lines(in, func(line string) bool {
			held = append(held, line)
			if int64(len(held)) > n {
				_, werr = out.WriteString(held[0])
				held = held[1:]
			}
			return werr == nil
		})
	} else {
		seen := int64(0)
		err = lines(in, func(line string) bool {
			if seen >= n {
				return false
			}
			seen++
			_, werr = out.WriteString(line)
			return werr == nil && seen < n
		})
	}
	if out.Flush() != nil || werr != nil || err != nil {
		return interp.ExitStatus(1)
	}
	return status(failed)
}

// maxTail bounds what tail holds: its last lines or bytes.
const maxTail = 1 << 20

func runTail(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("tail", hc)
	nLines := fs.StringP("lines", "n", "10", "")
	nBytes := fs.StringP("bytes", "c", "", "")
	if err := fs.Parse(obsoleteCount(args)); err != nil {
		return usage(hc, fs.Name(), err)
	}
	failed := false
	in := sh.inputs(ctx, hc, "tail", fs.Args(), &failed)
	spec := *nLines
	if *nBytes != "" {
		spec = *nBytes
	}
	n, sign, err := countArg(spec)
	if err != nil || (sign != '+' && n > maxTail) {
		return usage(hc, "tail", fmt.Errorf("invalid number: %q (at most %d)", spec, maxTail))
	}
	out := newToolOutput(hc.Stdout)
	defer out.Flush()
	if *nBytes != "" {
		data, err := io.ReadAll(in)
		if err != nil {
			return interp.ExitStatus(1)
		}
		start := max(int64(len(data))-n, 0)
		if sign == '+' {
			start = min(max(n-1, 0), int64(len(data)))
		}
		out.Write(data[start:])
		return status(failed)
	}
	var kept []string
	seen := int64(0)
	err = lines(in, func(line string) bool {
		seen++
		switch {
		case sign == '+':
			if seen >= n {
				_, err := out.WriteString(line)
				return err == nil
			}
		case n > 0:
			kept = append(kept, line)
			if int64(len(kept)) > n {
				kept = kept[1:]
			}
		}
		return true
	})
	for _, l := range kept {
		out.WriteString(l)
	}
	if err != nil {
		return interp.ExitStatus(1)
	}
	return status(failed)
}
