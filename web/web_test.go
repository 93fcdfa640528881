package web

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestLessons(t *testing.T) {
	lessons, err := LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	en, th := lessons["en"], lessons["th"]
	if len(en.Pages) < 5 || len(en.Pages) != len(th.Pages) {
		t.Fatalf("pages: en %d, th %d", len(en.Pages), len(th.Pages))
	}
	for i, p := range en.Pages {
		tp := th.Pages[i]
		if p.Slug != tp.Slug {
			t.Errorf("page %d: slug %q in English, %q in Thai", i, p.Slug, tp.Slug)
		}
		// Both languages show the same commands with the same real output.
		ec, tc := commands(p), commands(tp)
		if len(ec) != len(tc) {
			t.Errorf("%s: %d command blocks in English, %d in Thai", p.Slug, len(ec), len(tc))
			continue
		}
		for j := range ec {
			if ec[j].ID != tc[j].ID || realOutput(ec[j].Text) != realOutput(tc[j].Text) {
				t.Errorf("%s: block %d differs between languages:\n%s\n---\n%s", p.Slug, j, ec[j].Text, tc[j].Text)
			}
			if ec[j].Kind == Command && !strings.HasPrefix(ec[j].Command, "$ ") {
				t.Errorf("%s: command %s does not start with $: %q", p.Slug, ec[j].ID, ec[j].Command)
			}
		}
	}
	// Every runnable command of the lesson is one the server runs, and back.
	seen := map[string]bool{}
	for _, p := range en.Pages {
		for _, b := range commands(p) {
			seen[b.ID] = true
		}
	}
	for id := range LiveCommands {
		if !seen[id] {
			t.Errorf("live command %q is in no lesson block", id)
		}
	}
}

// realOutput drops the lesson's "... (N more ...)" notes, which are translated.
func realOutput(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "... (") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func commands(p *LessonPage) []Block {
	var out []Block
	for _, b := range p.Blocks {
		if b.Kind == Command || b.Kind == Code {
			out = append(out, b)
		}
	}
	return out
}

func TestParseLesson(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		l, err := ParseLesson("en", "=== a | A\n## H\ntext `c`\n```cmd x\n$ k \\\n  get\nout\n```\n- one\n- two\n| h1 | h2 |\n| a | b |\n?? Show\nans\n??\n::timeline\n")
		if err != nil {
			t.Fatal(err)
		}
		b := l.Pages[0].Blocks
		kinds := []BlockKind{Heading, Paragraph, Command, List, Table, Answer, Widget}
		if len(b) != len(kinds) {
			t.Fatalf("blocks: %+v", b)
		}
		for i, k := range kinds {
			if b[i].Kind != k {
				t.Errorf("block %d: kind %d, want %d", i, b[i].Kind, k)
			}
		}
		if b[2].Command != "$ k \\\n  get" || b[2].Text != "out" {
			t.Errorf("command %q output %q", b[2].Command, b[2].Text)
		}
		if len(b[3].Items) != 2 || len(b[4].Rows) != 2 || len(b[5].Body) != 1 {
			t.Errorf("list %v table %v answer %v", b[3].Items, b[4].Rows, b[5].Body)
		}
	})
	for name, src := range map[string]string{
		"ErrNoPage":       "text\n",
		"ErrUnknownView":  "=== a | A\n::nope\n",
		"ErrUnterminated": "=== a | A\n```code\nx\n",
		"ErrBadPage":      "=== a\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseLesson("en", src); err == nil {
				t.Fatal("parsed")
			}
		})
	}
}

func TestInline(t *testing.T) {
	got := Inline("a `b` **c** *d* e*")
	want := []Span{{"a ", 0}, {"b", '`'}, {" ", 0}, {"c", '*'}, {" ", 0}, {"d", '_'}, {" e*", 0}}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestPageEscapes(t *testing.T) {
	var buf bytes.Buffer
	evil := `<script>alert(1)</script>`
	if err := Page(evil, "th", ErrorPage("th", evil)).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, evil) || !strings.Contains(out, "&lt;script&gt;") {
		t.Fatalf("not escaped: %s", out)
	}
	if !strings.Contains(out, `<html lang="th">`) || strings.Contains(out, "<script>") {
		t.Fatal("page has the wrong language or inline script")
	}
}
