package terminal

import (
	"strings"
)

// refusal is a command the terminal will not run, with a message for the
// student (a key of messages, and what to fill it with).
type refusal struct {
	key  string
	args []any
}

func (r *refusal) Error() string { return r.key }

func refuse(key string, args ...any) *refusal { return &refusal{key: key, args: args} }

// split turns a command line into argv as a POSIX shell would quote it:
// 'single' and "double" quotes, backslash escapes and # comments, and
// nothing else.
// There is no shell behind the terminal, so what a shell would do with
// the line (pipes, redirects, variables, command substitution, several
// commands) is refused, with a word on why, rather than passed on to
// kubectl as an argument that would surprise the student.
func split(line string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
		comment bool // from a # that starts a word to the line's end
	)
	for _, c := range line {
		switch {
		case escaped && c == '\n':
			// A backslash before a newline joins the lines, as in a shell.
			escaped, inWord = false, cur.Len() > 0
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case comment && c != '\n':
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case quote == '"':
			switch c {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			case '$', '`':
				return nil, refuse("shell.expand", string(c))
			default:
				cur.WriteRune(c)
			}
		case c == '\\':
			escaped, inWord = true, true
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\n':
			return nil, refuse("shell.lines")
		case c == '#' && !inWord:
			comment = true
		case c == ' ' || c == '\t' || c == '\r':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>()", c):
			return nil, refuse("shell.operator", string(c))
		case c == '$' || c == '`':
			return nil, refuse("shell.expand", string(c))
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, refuse("shell.unterminated")
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}
