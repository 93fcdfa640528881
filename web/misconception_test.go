package web

import (
	"context"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/web/i18n"
)

// renderLesson renders page idx of the lesson in lang as a reader of the
// lesson's namespace sees it.
func renderLesson(t *testing.T, l *Lesson, idx int) string {
	t.Helper()
	var b strings.Builder
	if err := LessonView(l, idx, DemoNamespace, false).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The notes speak to a student who never read the lesson's source: each
// states a belief, then what Kubernetes does, then how to check, and none
// argues with a text the student has not seen.
func TestMisconceptionNotes(t *testing.T) {
	lessons, err := LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	// What the notes were called when they argued with the source.
	stale := []string{"Correction to the source", "แก้ไขจากต้นฉบับ"}
	source := map[i18n.Lang][]string{i18n.English: {"the source", "The source"}, i18n.Thai: {"ต้นฉบับ"}}
	notes := 0
	for _, lang := range i18n.Langs {
		l := lessons[lang]
		for idx, p := range l.Pages {
			page := renderLesson(t, l, idx)
			for _, s := range stale {
				if strings.Contains(page, s) {
					t.Errorf("%s %s: the page still says %q", lang, p.Slug, s)
				}
			}
			myths := misconceptions(p)
			notes += len(myths)
			if got := strings.Count(page, `<aside class="myth" role="note" aria-label="`+T(lang, "myth.title")+`"`); got != len(myths) {
				t.Errorf("%s %s: %d notes labelled %q on the page, want %d", lang, p.Slug, got, T(lang, "myth.title"), len(myths))
			}
			for _, m := range myths {
				belief := m.Body[0]
				if !strings.HasPrefix(belief, `"`) || !strings.HasSuffix(belief, `"`) {
					t.Errorf("%s %s: the note does not open with the belief, quoted: %q", lang, p.Slug, belief)
				}
				for _, para := range m.Body {
					for _, w := range source[lang] {
						if strings.Contains(para, w) {
							t.Errorf("%s %s: a note refers to %q, which the student never saw: %q", lang, p.Slug, w, para)
						}
					}
				}
			}
		}
	}
	if notes == 0 {
		t.Fatal("no misconception notes")
	}
}
