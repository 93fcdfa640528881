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
	// The spot-the-bug answer is the quiz's, in both languages, and the
	// page carries none of it.
	for _, l := range []*Lesson{en, th} {
		p, _ := l.Page("model")
		found := false
		for _, b := range p.Blocks {
			if b.Kind == Answer {
				found = b.ID == "spot-the-bug" && len(b.Body) == 0
			}
		}
		if !found {
			t.Errorf("%s: the spot-the-bug answer is not kept for its quiz", l.Lang)
		}
	}
	// Both languages note the same misconceptions, with the same proofs.
	for i, p := range en.Pages {
		ef, tf := misconceptions(p), misconceptions(th.Pages[i])
		if len(ef) != len(tf) {
			t.Errorf("%s: %d misconceptions in English, %d in Thai", p.Slug, len(ef), len(tf))
			continue
		}
		for j := range ef {
			if ef[j].ProofText() != tf[j].ProofText() {
				t.Errorf("%s: misconception %d proves differently:\n%s\n---\n%s", p.Slug, j, ef[j].ProofText(), tf[j].ProofText())
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

func misconceptions(p *LessonPage) []Block {
	var out []Block
	for _, b := range p.Blocks {
		if b.Kind == Misconception {
			out = append(out, b)
		}
	}
	return out
}

// TestTheSourcesErrorsStayCorrected fails if a claim the source got wrong
// comes back anywhere but in a misconception note, which states it on
// purpose.
func TestTheSourcesErrorsStayCorrected(t *testing.T) {
	lessons, err := LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	wrong := map[string]string{
		"get pods -o json | jq":                    "kubectl's own List has an empty resourceVersion; read the PodList with get --raw",
		"ADDED Pod rv=":                            "made-up output: kubectl prints no such line",
		"too old resource version: 1 (999)":        "made-up output: Y is where the watch cache's window begins",
		"Controllers, Informers, and Workqueues":   "a lesson that does not exist here",
		"Admission Chain":                          "a lesson that does not exist here",
		"Server-Side Apply Internals":              "a lesson that does not exist here",
		"Declarative YAML":                         "a lesson that does not exist here",
		"read it like a ConfigMap":                 "ConfigMaps are protobuf too",
		"read it the way you can read a ConfigMap": "ConfigMaps are protobuf too",
	}
	for lang, l := range lessons {
		for _, p := range l.Pages {
			for _, b := range p.Blocks {
				if b.Kind == Misconception {
					continue
				}
				text := strings.Join(append(append([]string{b.Text, b.Command}, b.Items...), b.Body...), "\n")
				for phrase, why := range wrong {
					if strings.Contains(text, phrase) {
						t.Errorf("%s %s: %q is back (%s)", lang, p.Slug, phrase, why)
					}
				}
			}
		}
	}
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
		l, err := ParseLesson("en", "=== a | A\n## H\ntext `c`\n```cmd x\n$ k \\\n  get\nout\n```\n- one\n- two\n| h1 | h2 |\n| a | b |\n?? Show\nans\n??\n::timeline\n!!myth\nwhat is believed\nwhat is true\n$ kubectl get x\n$ kubectl get y\n!!\n")
		if err != nil {
			t.Fatal(err)
		}
		b := l.Pages[0].Blocks
		kinds := []BlockKind{Heading, Paragraph, Command, List, Table, Answer, Widget, Misconception}
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
		if myth := b[7]; len(myth.Body) != 2 || myth.Body[0] != "what is believed" || myth.ProofText() != "$ kubectl get x\n$ kubectl get y" {
			t.Errorf("misconception %q proof %q", myth.Body, myth.ProofText())
		}
	})
	for name, src := range map[string]string{
		"ErrNoPage":       "text\n",
		"ErrUnknownView":  "=== a | A\n::nope\n",
		"ErrUnterminated": "=== a | A\n```code\nx\n",
		"ErrBadPage":      "=== a\n",
		// A misconception states the belief, what is true, and how to
		// check it, in that order.
		"ErrMisconceptionWithoutProof":  "=== a | A\n!!myth\nwhat is believed\nwhat is true\n!!\n",
		"ErrMisconceptionWithoutText":   "=== a | A\n!!myth\n$ kubectl get x\n!!\n",
		"ErrMisconceptionWithoutBelief": "=== a | A\n!!myth\nwhat is true\n$ kubectl get x\n!!\n",
		"ErrMisconceptionProofNotLast":  "=== a | A\n!!myth\nwhat is believed\n$ kubectl get x\nwhat is true\n!!\n",
		"ErrMisconceptionUnclosed":      "=== a | A\n!!myth\nwhat is believed\nwhat is true\n$ kubectl get x\n",
		"ErrMisconceptionHoldsList":     "=== a | A\n!!myth\n- item\n!!\n",
		"ErrMisconceptionInAnswer":      "=== a | A\n?? Show\n!!myth\n",
		"ErrTheOldCorrectionMark":       "=== a | A\n!!fix\nwhat is believed\nwhat is true\n$ kubectl get x\n!!\n",
		"ErrStrayClose":                 "=== a | A\n!!\n",
		// A quiz's answer is the quiz's: the page must not carry it.
		"ErrQuizAnswerWithText": "=== a | A\n?? Show {quiz=spot-the-bug}\nthe answer\n??\n",
		"ErrQuizAnswerBadID":    "=== a | A\n?? Show {quiz=Spot The Bug}\n??\n",
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
