package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
	"mvdan.cc/sh/v3/interp"
)

// runJQ is jq, by gojq (github.com/itchyny/gojq), with the flags a
// one-liner uses: -r, -c, -e, -n, -s, -j and --arg/--argjson. gojq's own
// command reads os.Args and the server's files, so the shell drives its
// library; with no environment or module loader, $ENV is empty and
// import finds nothing. One difference from jq 1.7 remains: gojq prints
// an object's keys sorted, not in the order they came.
func runJQ(sh *shell, ctx context.Context, hc interp.HandlerContext, args []string) error {
	var raw, compact, exitStatus, nullInput, slurp, join bool
	var filter string
	var files, names []string
	var values []any
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--arg" || a == "--argjson":
			if i+2 >= len(args) {
				return usage(hc, "jq", fmt.Errorf("%s takes a name and a value", a))
			}
			var v any = args[i+2]
			if a == "--argjson" {
				if err := json.Unmarshal([]byte(args[i+2]), &v); err != nil {
					return usage(hc, "jq", fmt.Errorf("invalid JSON text passed to --argjson: %v", err))
				}
			}
			names, values = append(names, "$"+args[i+1]), append(values, v)
			i += 2
		case a == "--raw-output":
			raw = true
		case a == "--compact-output":
			compact = true
		case a == "--exit-status":
			exitStatus = true
		case a == "--null-input":
			nullInput = true
		case a == "--slurp":
			slurp = true
		case a == "--join-output":
			raw, join = true, true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'r':
					raw = true
				case 'c':
					compact = true
				case 'e':
					exitStatus = true
				case 'n':
					nullInput = true
				case 's':
					slurp = true
				case 'j':
					raw, join = true, true
				default:
					return usage(hc, "jq", fmt.Errorf("unknown flag -%c: this jq takes -r, -c, -e, -n, -s, -j, --arg and --argjson", c))
				}
			}
		case strings.HasPrefix(a, "--"):
			return usage(hc, "jq", fmt.Errorf("unknown flag %s", a))
		case filter == "":
			filter = a
		default:
			files = append(files, a)
		}
	}
	if filter == "" {
		filter = "."
	}
	query, err := gojq.Parse(filter)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "jq: error: %v\njq: 1 compile error\n", err)
		return interp.ExitStatus(3)
	}
	code, err := gojq.Compile(query, gojq.WithVariables(names))
	if err != nil {
		fmt.Fprintf(hc.Stderr, "jq: error: %v\njq: 1 compile error\n", err)
		return interp.ExitStatus(3)
	}

	failed := false
	dec := json.NewDecoder(sh.inputs(ctx, hc, "jq", files, &failed))
	dec.UseNumber()
	next := func() (any, error) {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		return normalizeNumbers(v), nil
	}
	var inputs []any
	switch {
	case nullInput:
		inputs = []any{nil}
	case slurp:
		all := []any{}
		for {
			v, err := next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return jqInputError(hc, err)
			}
			all = append(all, v)
		}
		inputs = []any{all}
	}

	var last any
	outputs := 0
	emit := func(v any) error {
		last, outputs = v, outputs+1
		if s, ok := v.(string); ok && raw {
			_, err := io.WriteString(hc.Stdout, s)
			if err == nil && !join {
				_, err = io.WriteString(hc.Stdout, "\n")
			}
			return err
		}
		b, err := gojq.Marshal(v)
		if err != nil {
			return err
		}
		if !compact {
			var pretty bytes.Buffer
			if json.Indent(&pretty, b, "", "  ") == nil {
				b = pretty.Bytes()
			}
		}
		if !join {
			b = append(b, '\n')
		}
		_, err = hc.Stdout.Write(b)
		return err
	}
	run := func(in any) error {
		iter := code.RunWithContext(ctx, in, values...)
		for {
			v, ok := iter.Next()
			if !ok {
				return nil
			}
			if err, isErr := v.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					return nil
				}
				fmt.Fprintf(hc.Stderr, "jq: error: %v\n", err)
				return interp.ExitStatus(5)
			}
			if err := emit(v); err != nil {
				return interp.ExitStatus(1)
			}
		}
	}
	if inputs != nil {
		for _, in := range inputs {
			if err := run(in); err != nil {
				return err
			}
		}
	} else {
		for {
			in, err := next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return jqInputError(hc, err)
			}
			if err := run(in); err != nil {
				return err
			}
		}
	}
	switch {
	case failed:
		return interp.ExitStatus(2)
	case exitStatus && outputs == 0:
		return interp.ExitStatus(4)
	case exitStatus && (last == nil || last == false):
		return interp.ExitStatus(1)
	}
	return nil
}

func jqInputError(hc interp.HandlerContext, err error) error {
	fmt.Fprintf(hc.Stderr, "jq: error (at <stdin>): %v\n", err)
	return interp.ExitStatus(2)
}

// normalizeNumbers turns json.Number into what gojq computes with: an int
// where the number is one, a float64 otherwise.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	}
	return v
}
