package terminal

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// maxCompletions bounds what one Tab sends back.
const maxCompletions = 200

// complete answers a Tab: the completions of the line's last word, from
// kubectl's own completion (its hidden __complete command, which is what
// kubectl's shell completion scripts call), run as the student.
func (s *session) complete(ctx context.Context, m inMsg) {
	items := s.completions(ctx, m.Line)
	if len(items) > maxCompletions {
		items = items[:maxCompletions]
	}
	s.send(outMsg{T: "comp", ID: m.ID, Items: items})
}

func (s *session) completions(ctx context.Context, line string) []string {
	words, err := split(line)
	if err != nil {
		return nil
	}
	toComplete := ""
	if line != "" && !strings.HasSuffix(line, " ") && len(words) > 0 {
		toComplete, words = words[len(words)-1], words[:len(words)-1]
	}
	if len(words) == 0 {
		programs := []string{"kubectl"}
		if s.t.cfg.Etcd != nil && !s.t.cfg.Classroom {
			programs = append(programs, "etcdctl")
		}
		return withPrefix(programs, toComplete)
	}
	switch words[0] {
	case "kubectl", "k":
	case "etcdctl":
		if len(words) == 1 {
			return withPrefix([]string{"get", "watch", "endpoint"}, toComplete)
		}
		return nil
	default:
		return nil
	}
	if checkLine(words[1:], false) != nil || s.t.enter(s.owner) != nil {
		return nil
	}
	defer s.t.leave(s.owner)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out := &limitedBuffer{max: 256 << 10}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard}
	argv := append(append([]string{"__complete"}, words[1:]...), toComplete)
	if s.t.cfg.Processes {
		runChild(ctx, s.id, s.lang, s.t.cfg.Limits, childSpec{Args: argv}, streams)
	} else {
		runKubectl(ctx, s.id, argv, streams.In, streams, func(*refusal) {})
	}
	return parseCompletions(out.String())
}

// parseCompletions reads cobra's __complete output: one completion a line
// (a tab, then its description), and a last line ":<directive>".
func parseCompletions(out string) []string {
	var items []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, ":") || strings.HasPrefix(l, "Completion ended") {
			continue
		}
		item, _, _ := strings.Cut(l, "\t")
		items = append(items, item)
	}
	return items
}

func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// limitedBuffer keeps the first max bytes written.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
