package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// The shell's tools that order, count and reshape lines: sort, uniq, wc,
// cut and tr (see tools.go).

// readLines reads every line of r, without newlines.
func readLines(r io.Reader) ([]string, error) {
	var all []string
	err := lines(r, func(l string) bool {
		all = append(all, strings.TrimSuffix(l, "\n"))
		return true
	})
	return all, err
}

// writeLines writes ls, a newline after each.
func writeLines(w io.Writer, ls []string) error {
	out := newToolOutput(w)
	for _, l := range ls {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	return out.Flush()
}

func runSort(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("sort", hc)
	numeric := fs.BoolP("numeric-sort", "n", false, "")
	reverse := fs.BoolP("reverse", "r", false, "")
	unique := fs.BoolP("unique", "u", false, "")
	fold := fs.BoolP("ignore-case", "f", false, "")
	key := fs.StringP("key", "k", "", "")
	sep := fs.StringP("field-separator", "t", "", "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	failed := false
	all, err := readLines(sh.inputs(ctx, hc, "sort", fs.Args(), &failed))
	if err != nil {
		return interp.ExitStatus(2)
	}
	from, to := 0, 0 // 1-based fields; 0: the whole line, or to its end
	if *key != "" {
		f, t, _ := strings.Cut(*key, ",")
		if from, err = strconv.Atoi(f); err != nil || from < 1 {
			return usage(hc, "sort", fmt.Errorf("invalid key %q: this sort takes -k N or -k N,M", *key))
		}
		if t != "" {
			if to, err = strconv.Atoi(t); err != nil || to < from {
				return usage(hc, "sort", fmt.Errorf("invalid key %q", *key))
			}
		}
	}
	keyOf := func(line string) string {
		if from == 0 {
			return line
		}
		var fields []string
		if *sep != "" {
			fields = strings.Split(line, *sep)
		} else {
			fields = strings.Fields(line)
		}
		if from > len(fields) {
			return ""
		}
		end := len(fields)
		if to > 0 {
			end = min(to, len(fields))
		}
		j := " "
		if *sep != "" {
			j = *sep
		}
		return strings.Join(fields[from-1:end], j)
	}
	less := func(a, b string) int {
		ka, kb := keyOf(a), keyOf(b)
		if *numeric {
			na, _ := strconv.ParseFloat(strings.Fields(ka + " 0")[0], 64)
			nb, _ := strconv.ParseFloat(strings.Fields(kb + " 0")[0], 64)
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
		}
		if *fold {
			ka, kb = strings.ToLower(ka), strings.ToLower(kb)
		}
		return strings.Compare(ka, kb)
	}
	sort.SliceStable(all, func(i, j int) bool {
		c := less(all[i], all[j])
		if *reverse {
			return c > 0
		}
		return c < 0
	})
	if *unique {
		var kept []string
		for i, l := range all {
			if i == 0 || less(all[i-1], l) != 0 {
				kept = append(kept, l)
			}
		}
		all = kept
	}
	if writeLines(hc.Stdout, all) != nil {
		return interp.ExitStatus(2)
	}
	return status(failed)
}

func runUniq(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("uniq", hc)
	count := fs.BoolP("count", "c", false, "")
	repeated := fs.BoolP("repeated", "d", false, "")
	unique := fs.BoolP("unique", "u", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	failed := false
	out := newToolOutput(hc.Stdout)
	prev, n := "", 0
	flush := func() {
		if n == 0 || (*repeated && n < 2) || (*unique && n > 1) {
			return
		}
		if *count {
			fmt.Fprintf(out, "%7d ", n)
		}
		out.WriteString(prev)
		out.WriteByte('\n')
	}
	err := lines(sh.inputs(ctx, hc, "uniq", fs.Args(), &failed), func(l string) bool {
		l = strings.TrimSuffix(l, "\n")
		if n > 0 && l == prev {
			n++
			return true
		}
		flush()
		prev, n = l, 1
		return true
	})
	flush()
	if out.Flush() != nil || err != nil {
		return interp.ExitStatus(1)
	}
	return status(failed)
}

func runWc(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("wc", hc)
	l := fs.BoolP("lines", "l", false, "")
	w := fs.BoolP("words", "w", false, "")
	c := fs.BoolP("bytes", "c", false, "")
	m := fs.BoolP("chars", "m", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	if !*l && !*w && !*c && !*m {
		*l, *w, *c = true, true, true
	}
	failed := false
	var nl, nw, nc, nm int
	err := lines(sh.inputs(ctx, hc, "wc", fs.Args(), &failed), func(line string) bool {
		if strings.HasSuffix(line, "\n") {
			nl++
		}
		nw += len(strings.Fields(line))
		nc += len(line)
		nm += len([]rune(line))
		return true
	})
	if err != nil {
		return interp.ExitStatus(1)
	}
	var counts []int
	for _, x := range []struct {
		on bool
		n  int
	}{{*l, nl}, {*w, nw}, {*m, nm}, {*c, nc}} {
		if x.on {
			counts = append(counts, x.n)
		}
	}
	if len(counts) == 1 {
		fmt.Fprintln(hc.Stdout, counts[0])
	} else {
		var parts []string
		for _, n := range counts {
			parts = append(parts, fmt.Sprintf("%7d", n))
		}
		fmt.Fprintln(hc.Stdout, strings.Join(parts, " "))
	}
	return status(failed)
}

// fieldList reads cut's LIST: N, N-M, N- and -M, comma separated.
func fieldList(list string) (func(int) bool, error) {
	type span struct{ from, to int }
	var spans []span
	for _, part := range strings.Split(list, ",") {
		f, t, isRange := strings.Cut(part, "-")
		s := span{1, 1 << 30}
		var err error
		if f != "" {
			if s.from, err = strconv.Atoi(f); err != nil || s.from < 1 {
				return nil, fmt.Errorf("invalid field list %q", list)
			}
		}
		switch {
		case !isRange:
			s.to = s.from
		case t != "":
			if s.to, err = strconv.Atoi(t); err != nil || s.to < s.from {
				return nil, fmt.Errorf("invalid field list %q", list)
			}
		}
		spans = append(spans, s)
	}
	return func(i int) bool {
		for _, s := range spans {
			if i >= s.from && i <= s.to {
				return true
			}
		}
		return false
	}, nil
}

func runCut(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("cut", hc)
	delim := fs.StringP("delimiter", "d", "\t", "")
	fields := fs.StringP("fields", "f", "", "")
	chars := fs.StringP("characters", "c", "", "")
	onlyDelimited := fs.BoolP("only-delimited", "s", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	list := *fields
	if *chars != "" {
		list = *chars
	}
	if (*fields == "") == (*chars == "") {
		return usage(hc, "cut", errors.New("give one of -f LIST or -c LIST"))
	}
	keep, err := fieldList(list)
	if err != nil {
		return usage(hc, "cut", err)
	}
	failed := false
	out := newToolOutput(hc.Stdout)
	err = lines(sh.inputs(ctx, hc, "cut", fs.Args(), &failed), func(l string) bool {
		l = strings.TrimSuffix(l, "\n")
		var picked []string
		if *chars != "" {
			for i, r := range []rune(l) {
				if keep(i + 1) {
					picked = append(picked, string(r))
				}
			}
			out.WriteString(strings.Join(picked, ""))
		} else {
			if !strings.Contains(l, *delim) {
				if !*onlyDelimited {
					out.WriteString(l + "\n")
				}
				return true
			}
			for i, f := range strings.Split(l, *delim) {
				if keep(i + 1) {
					picked = append(picked, f)
				}
			}
			out.WriteString(strings.Join(picked, *delim))
		}
		_, err := out.WriteString("\n")
		return err == nil
	})
	if out.Flush() != nil || err != nil {
		return interp.ExitStatus(1)
	}
	return status(failed)
}

// trSet expands a tr set: ranges a-z, the classes [:upper:] [:lower:]
// [:digit:] [:alpha:] [:alnum:] [:space:], and \n \t \\ escapes.
func trSet(s string) []rune {
	classes := map[string]string{
		"[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "[:lower:]": "abcdefghijklmnopqrstuvwxyz", "[:digit:]": "0123456789",
		"[:space:]": " \t\n\r\v\f",
	}
	classes["[:alpha:]"] = classes["[:upper:]"] + classes["[:lower:]"]
	classes["[:alnum:]"] = classes["[:alpha:]"] + classes["[:digit:]"]
	for name, members := range classes {
		s = strings.ReplaceAll(s, name, members)
	}
	s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
	in := []rune(s)
	var out []rune
	for i := 0; i < len(in); i++ {
		if i+2 < len(in) && in[i+1] == '-' && in[i] <= in[i+2] {
			for r := in[i]; r <= in[i+2]; r++ {
				out = append(out, r)
			}
			i += 2
			continue
		}
		out = append(out, in[i])
	}
	return out
}

func runTr(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	fs := toolFlags("tr", hc)
	del := fs.BoolP("delete", "d", false, "")
	squeeze := fs.BoolP("squeeze-repeats", "s", false, "")
	if err := fs.Parse(args); err != nil {
		return usage(hc, fs.Name(), err)
	}
	sets := fs.Args()
	if len(sets) == 0 || len(sets) > 2 || (!*del && !*squeeze && len(sets) != 2) {
		return usage(hc, "tr", errors.New("usage: tr [-d] [-s] SET1 [SET2]"))
	}
	from := trSet(sets[0])
	var to []rune
	if len(sets) == 2 {
		to = trSet(sets[1])
	}
	mapping := map[rune]rune{}
	inFrom := map[rune]bool{}
	for i, r := range from {
		inFrom[r] = true
		if len(to) > 0 && !*del {
			mapping[r] = to[min(i, len(to)-1)]
		}
	}
	squeezeSet := map[rune]bool{}
	for _, r := range to {
		squeezeSet[r] = true
	}
	if len(to) == 0 || *del {
		squeezeSet = inFrom
		if *del && len(to) > 0 {
			squeezeSet = map[rune]bool{}
			for _, r := range to {
				squeezeSet[r] = true
			}
		}
	}
	br := bufio.NewReader(hc.Stdin)
	out := newToolOutput(hc.Stdout)
	last, hasLast := rune(0), false
	for {
		r, _, err := br.ReadRune()
		if err != nil {
			break
		}
		if *del && inFrom[r] {
			continue
		}
		if m, ok := mapping[r]; ok {
			r = m
		}
		if *squeeze && hasLast && r == last && squeezeSet[r] {
			continue
		}
		last, hasLast = r, true
		if _, err := out.WriteRune(r); err != nil {
			return interp.ExitStatus(1)
		}
	}
	if out.Flush() != nil {
		return interp.ExitStatus(1)
	}
	return nil
}
