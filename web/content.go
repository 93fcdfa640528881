package web

import (
	"bufio"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a-h/templ"

	"github.com/kubelab/kubelab/web/i18n"
)

//go:embed content/*.txt
var contentFS embed.FS

// Lesson is the lesson in one language: its pages in reading order.
type Lesson struct {
	Lang  i18n.Lang
	Pages []*LessonPage
}

// LessonPage is one page of the lesson.
type LessonPage struct {
	Slug   string
	Title  string
	Blocks []Block
}

// BlockKind says how a block is drawn.
type BlockKind int

// The kinds of block a lesson page is made of.
const (
	Heading BlockKind = iota
	Paragraph
	List
	Table
	Code    // a code or output sample, not runnable
	Command // a command with its recorded output, runnable live
	Answer  // a hidden answer, shown on request
	Widget  // a live view: flowchart, tracer, timeline, inspector, pollwatch
	LabLink // a link to the hands-on lab that practises the section
	// Misconception is a common misconception, marked: the belief, what
	// Kubernetes 1.37 really does, and the commands that prove it.
	Misconception
)

// Block is one part of a page.
type Block struct {
	Kind BlockKind
	// ID is a heading's anchor, a command's id, a widget's name, or the
	// quiz an Answer is kept for until the student has submitted it.
	ID string
	// Text is a heading's or an answer's summary, a paragraph, or code.
	Text string
	// Command is the command line of a Command block; Text is its output.
	Command string
	Items   []string   // List items
	Rows    [][]string // Table rows, the header first
	// Body is an Answer's paragraphs, or a Misconception's: the belief
	// first, then what Kubernetes does.
	Body  []string
	Proof []string // a Misconception's proof: commands a student can run
}

// Widgets a page may embed with "::name".
var widgets = map[string]bool{"flowchart": true, "tracer": true, "timeline": true, "inspector": true, "pollwatch": true}

// LoadLessons parses the embedded lesson files, one per language.
func LoadLessons() (map[i18n.Lang]*Lesson, error) {
	out := map[i18n.Lang]*Lesson{}
	for _, lang := range i18n.Langs {
		b, err := contentFS.ReadFile("content/" + string(lang) + ".txt")
		if err != nil {
			return nil, err
		}
		l, err := ParseLesson(lang, string(b))
		if err != nil {
			return nil, fmt.Errorf("lesson %s: %w", lang, err)
		}
		out[lang] = l
	}
	return out, nil
}

// ParseLesson reads kubelab's lesson format: "=== slug | title" starts a
// page, "## " a heading, "::name" a live view, fenced "```cmd id" and
// "```code" blocks, "- " list items, "| a | b |" table rows, "?? summary"
// ... "??" a hidden answer ("?? summary {quiz=id}" then "??": that quiz's
// answer, shown once the student has submitted it), "!!myth" ... "!!" a
// common misconception (its first line the belief, then what Kubernetes
// does, its "$ " lines the proof); other lines are paragraphs.
func ParseLesson(lang i18n.Lang, src string) (*Lesson, error) {
	l := &Lesson{Lang: lang}
	var page *LessonPage
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var fence *Block
	var answer *Block
	var myth *Block
	n := 0
	add := func(b Block) error {
		if page == nil {
			return fmt.Errorf("line %d: content before the first page", n)
		}
		if answer != nil && b.Kind == Paragraph {
			answer.Body = append(answer.Body, b.Text)
			return nil
		}
		if myth != nil {
			if b.Kind != Paragraph {
				return fmt.Errorf("line %d: a misconception holds only paragraphs and \"$ \" proof lines", n)
			}
			if cmd, ok := strings.CutPrefix(b.Text, "$ "); ok {
				myth.Proof = append(myth.Proof, cmd)
			} else if len(myth.Proof) > 0 {
				return fmt.Errorf("line %d: a misconception's proof comes last", n)
			} else {
				myth.Body = append(myth.Body, b.Text)
			}
			return nil
		}
		last := len(page.Blocks) - 1
		switch {
		case b.Kind == List && last >= 0 && page.Blocks[last].Kind == List:
			page.Blocks[last].Items = append(page.Blocks[last].Items, b.Items...)
		case b.Kind == Table && last >= 0 && page.Blocks[last].Kind == Table:
			page.Blocks[last].Rows = append(page.Blocks[last].Rows, b.Rows...)
		default:
			page.Blocks = append(page.Blocks, b)
		}
		return nil
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		if fence != nil {
			if line == "```" {
				fence.Text = strings.TrimSuffix(fence.Text, "\n")
				if fence.Kind == Command {
					fence.Command, fence.Text = splitCommand(fence.Text)
				}
				if err := add(*fence); err != nil {
					return nil, err
				}
				fence = nil
				continue
			}
			fence.Text += line + "\n"
			continue
		}
		var err error
		switch {
		case strings.HasPrefix(line, "=== "):
			slug, title, ok := strings.Cut(strings.TrimPrefix(line, "=== "), " | ")
			if !ok {
				return nil, fmt.Errorf("line %d: want \"=== slug | title\"", n)
			}
			page = &LessonPage{Slug: strings.TrimSpace(slug), Title: strings.TrimSpace(title)}
			l.Pages = append(l.Pages, page)
		case strings.HasPrefix(line, "## "):
			var h Block
			if h, err = heading(strings.TrimPrefix(line, "## "), n, page); err == nil {
				err = add(h)
			}
		case strings.HasPrefix(line, "::lab "):
			id := strings.TrimSpace(strings.TrimPrefix(line, "::lab "))
			if !validID(id) {
				return nil, fmt.Errorf("line %d: lab id %q: want lowercase letters, digits and dashes", n, id)
			}
			err = add(Block{Kind: LabLink, ID: id})
		case strings.HasPrefix(line, "::"):
			name := strings.TrimPrefix(line, "::")
			if !widgets[name] {
				return nil, fmt.Errorf("line %d: unknown view %q", n, name)
			}
			err = add(Block{Kind: Widget, ID: name})
		case strings.HasPrefix(line, "```cmd "):
			fence = &Block{Kind: Command, ID: strings.TrimPrefix(line, "```cmd ")}
		case line == "```code":
			fence = &Block{Kind: Code}
		case strings.HasPrefix(line, "- "):
			err = add(Block{Kind: List, Items: []string{strings.TrimPrefix(line, "- ")}})
		case strings.HasPrefix(line, "| "):
			var row []string
			for _, c := range strings.Split(strings.Trim(line, "| "), " | ") {
				row = append(row, strings.TrimSpace(c))
			}
			err = add(Block{Kind: Table, Rows: [][]string{row}})
		case line == "!!myth":
			if myth != nil || answer != nil {
				return nil, fmt.Errorf("line %d: a misconception cannot open inside another block", n)
			}
			if err = add(Block{Kind: Misconception}); err == nil {
				myth = &page.Blocks[len(page.Blocks)-1]
			}
		case line == "!!":
			if myth == nil {
				return nil, fmt.Errorf("line %d: \"!!\" closes no misconception", n)
			}
			// A student who has never met the belief reads it, then what
			// Kubernetes does, then how to check.
			if len(myth.Body) < 2 || len(myth.Proof) == 0 {
				return nil, fmt.Errorf("line %d: a misconception needs the belief, what Kubernetes does and a \"$ \" proof", n)
			}
			myth = nil
		case line == "??":
			if answer != nil && answer.ID != "" && len(answer.Body) > 0 {
				return nil, fmt.Errorf("line %d: an answer kept for quiz %q has no text of its own: the quiz's explanation is shown once it is submitted", n, answer.ID)
			}
			answer = nil
		case strings.HasPrefix(line, "?? "):
			b := Block{Kind: Answer, Text: strings.TrimPrefix(line, "?? ")}
			// "?? Show the answer {quiz=spot-the-bug}": the answer is that
			// quiz's, shown once the student has submitted it, never before.
			if i := strings.LastIndex(b.Text, " {quiz="); i >= 0 && strings.HasSuffix(b.Text, "}") {
				b.Text, b.ID = b.Text[:i], b.Text[i+len(" {quiz="):len(b.Text)-1]
				if !validID(b.ID) {
					return nil, fmt.Errorf("line %d: quiz id %q: want lowercase letters, digits and dashes", n, b.ID)
				}
			}
			if err = add(b); err == nil {
				answer = &page.Blocks[len(page.Blocks)-1]
			}
		case strings.TrimSpace(line) == "":
		default:
			err = add(Block{Kind: Paragraph, Text: line})
		}
		if err != nil {
			return nil, err
		}
	}
	if fence != nil || answer != nil || myth != nil {
		return nil, fmt.Errorf("unterminated block at the end")
	}
	return l, sc.Err()
}

// heading reads "Title {#id}": the id is the heading's anchor, stable
// whatever the line number, so links into the lesson (the quizzes', the
// labs') keep landing. A heading without one gets "s<line>".
func heading(text string, n int, page *LessonPage) (Block, error) {
	b := Block{Kind: Heading, Text: text, ID: fmt.Sprintf("s%d", n)}
	if i := strings.LastIndex(text, " {#"); i >= 0 && strings.HasSuffix(text, "}") {
		id := text[i+3 : len(text)-1]
		if !validID(id) {
			return b, fmt.Errorf("line %d: heading id %q: want lowercase letters, digits and dashes", n, id)
		}
		if page != nil {
			for _, o := range page.Blocks {
				if o.Kind == Heading && o.ID == id {
					return b, fmt.Errorf("line %d: heading id %q is used twice on page %q", n, id, page.Slug)
				}
			}
		}
		b.Text, b.ID = strings.TrimSpace(text[:i]), id
	}
	return b, nil
}

func validID(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// Anchor returns the path of the page holding the heading id, with the
// id as the fragment ("/lesson/gone#gone"), or "" if no heading has it.
func (l *Lesson) Anchor(id string) string {
	for _, p := range l.Pages {
		for _, b := range p.Blocks {
			if b.Kind == Heading && b.ID == id {
				return "/lesson/" + p.Slug + "#" + id
			}
		}
	}
	return ""
}

// splitCommand separates a command block's "$ " line (with its "\"
// continuations) from the recorded output after it.
func splitCommand(text string) (cmd, output string) {
	lines := strings.Split(text, "\n")
	i := 0
	for i < len(lines) {
		cont := strings.HasSuffix(lines[i], "\\")
		i++
		if !cont {
			break
		}
	}
	return strings.Join(lines[:i], "\n"), strings.Join(lines[i:], "\n")
}

// rawEquivalents are the commands "Run it live" runs in place of a lesson
// command that no request to kubelab can stand for (a kubectl exec into the
// source's etcd pod), by the command's id; %s is the reader's namespace.
var rawEquivalents = map[string]string{
	"etcd-get": "etcdctl get /registry/pods/%s/ssa-demo",
}

// RawEquivalent returns what "Run it live" runs for the command id in
// namespace ns when that is not the lesson's own command line, or "".
func RawEquivalent(id, ns string) string {
	if c, ok := rawEquivalents[id]; ok {
		return fmt.Sprintf(c, ns)
	}
	return ""
}

// ProofText is a misconception's proof as a terminal shows it: one "$ "
// command a line.
func (b Block) ProofText() string {
	return "$ " + strings.Join(b.Proof, "\n$ ")
}

// Page returns the page with slug and its index, or nil.
func (l *Lesson) Page(slug string) (*LessonPage, int) {
	for i, p := range l.Pages {
		if p.Slug == slug {
			return p, i
		}
	}
	return nil, -1
}

// Span is a run of inline text: plain, code, strong or emphasised.
type Span struct {
	Text string
	Kind byte // 0 plain, '`' code, '*' strong, '_' emphasis
}

// Inline splits text into spans: `code`, **strong**, *emphasis*.
func Inline(text string) []Span {
	var out []Span
	for text != "" {
		i := strings.IndexAny(text, "`*")
		if i < 0 {
			out = append(out, Span{Text: text})
			break
		}
		delim, kind := text[i:i+1], text[i]
		if strings.HasPrefix(text[i:], "**") {
			delim = "**"
		} else if kind == '*' {
			kind = '_'
		}
		end := strings.Index(text[i+len(delim):], delim)
		if end < 0 {
			out = append(out, Span{Text: text})
			break
		}
		if i > 0 {
			out = append(out, Span{Text: text[:i]})
		}
		out = append(out, Span{Text: text[i+len(delim) : i+len(delim)+end], Kind: kind})
		text = text[i+2*len(delim)+end:]
	}
	return out
}

// DemoNamespace is the namespace the lesson's commands are written for:
// the reader's own in local mode. A student in a class works in a
// namespace of their own, and the page shows every command there.
const DemoNamespace = "internals-demo"

// InNamespace is a command, or a sample of commands, as a reader whose
// namespace is ns must type it.
func InNamespace(text, ns string) string {
	if ns == "" || ns == DemoNamespace {
		return text
	}
	return strings.ReplaceAll(text, DemoNamespace, ns)
}

// Commands are the commands a code sample or a command block tells the
// reader to type: each "$ " line, with its "\" continuations and the body
// of a "<<'EOF'" heredoc; the other lines are output.
func Commands(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			continue
		}
		for strings.HasSuffix(lines[i], "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		if _, rest, ok := strings.Cut(cmd, "<<'"); ok {
			end, _, _ := strings.Cut(rest, "'")
			for i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
				if lines[i] == end {
					break
				}
			}
		}
		out = append(out, cmd)
	}
	return out
}

// ReadsEtcd reports whether text runs etcdctl, which talks to etcd itself,
// not to the API server: it works against a kubelab of one's own, whose
// etcd listens on loopback, and not in a class, where students have no
// access to etcd and read its keys in the inspector instead.
func ReadsEtcd(text string) bool {
	for _, c := range Commands(text) {
		if strings.HasPrefix(c, "etcdctl ") || strings.Contains(c, "| etcdctl ") {
			return true
		}
	}
	return false
}

// CommandAttrs marks a block with the commands it shows, for its "Copy"
// and "Paste into terminal" buttons (commands.js); a block with none gets
// no mark and no buttons.
func CommandAttrs(cmds ...string) templ.Attributes {
	cmds = slices.DeleteFunc(cmds, func(c string) bool { return strings.TrimSpace(c) == "" })
	if len(cmds) == 0 {
		return templ.Attributes{}
	}
	b, _ := json.Marshal(cmds)
	return templ.Attributes{"data-commands": string(b)}
}
