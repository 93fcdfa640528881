package web_test

import (
	"strings"
	"testing"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web"
)

// TestLinksIntoTheLessonLand checks that every link into the lesson (the
// quizzes' proofs, the labs' sections) names a page and a heading that
// exist, in every language.
func TestLinksIntoTheLessonLand(t *testing.T) {
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, q := range quiz.Lesson().Quizzes() {
		for _, qu := range q.Questions {
			if qu.Proof.Href != "" {
				links[qu.Proof.Href] = "quiz " + q.ID + " question " + qu.ID
			}
			for _, b := range qu.Bugs {
				links[b.Proof.Href] = "quiz " + q.ID + " bug"
			}
		}
	}
	for _, l := range labs.All() {
		links[l.Lesson] = "lab " + l.ID
	}
	if len(links) < 8 {
		t.Fatalf("only %d links found", len(links))
	}
	for href, from := range links {
		_, id, ok := strings.Cut(href, "#")
		if !ok {
			t.Errorf("%s: %q has no anchor", from, href)
			continue
		}
		for lang, l := range lessons {
			if got := l.Anchor(id); got != href {
				t.Errorf("%s: %q: in %s the heading #%s is at %q", from, href, lang, id, got)
			}
		}
	}
}

// TestLabLinksInTheLesson: each lab is linked from its lesson section.
func TestLabLinksInTheLesson(t *testing.T) {
	lessons, err := web.LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	for lang, l := range lessons {
		linked := map[string]bool{}
		for _, p := range l.Pages {
			for _, b := range p.Blocks {
				if b.Kind == web.LabLink {
					linked[b.ID] = true
				}
			}
		}
		for _, lb := range labs.All() {
			if !linked[lb.ID] {
				t.Errorf("%s: no link to lab %q in the lesson", lang, lb.ID)
			}
		}
	}
}

func TestHeadingIDs(t *testing.T) {
	l, err := web.ParseLesson("en", "=== p | P\n## A {#a-1}\n## B\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Pages[0].Blocks[0]; got.ID != "a-1" || got.Text != "A" {
		t.Errorf("named heading: %+v", got)
	}
	if got := l.Pages[0].Blocks[1]; got.ID != "s3" {
		t.Errorf("unnamed heading: %+v", got)
	}
	for _, bad := range []string{"=== p | P\n## A {#Bad Id}\n", "=== p | P\n## A {#a}\n## B {#a}\n", "=== p | P\n::lab Bad\n"} {
		if _, err := web.ParseLesson("en", bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
