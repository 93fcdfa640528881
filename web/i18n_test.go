package web

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/kubelab/kubelab/web/i18n"
)

// Every word the lesson's pages and live views show exists in English
// and in Thai.
func TestCataloguesAreWhole(t *testing.T) {
	for _, m := range uiStrings.Missing() {
		t.Errorf("uiStrings: %s", m)
	}
	for _, m := range flowLabels.Missing() {
		t.Errorf("flowLabels: %s", m)
	}
}

// A Thai page says its labels, titles and aria-labels in Thai: every Thai
// word of the catalogue has Thai letters in it, but for names that are
// the same in every language. Before, "Pipeline tracer", "Watch
// timeline", "Key" and a raw "2s" sat in Thai pages, and a Thai label
// beginning with "output" was shown as an upper-case "OUTPUT".
func TestThaiWordsAreThai(t *testing.T) {
	names := map[string]bool{"account.kubeconfig": true}
	for key, word := range uiStrings.In(i18n.Thai) {
		if names[key] {
			continue
		}
		if !strings.ContainsFunc(word, func(r rune) bool { return unicode.Is(unicode.Thai, r) }) {
			t.Errorf("%s is %q in Thai, with no Thai in it", key, word)
		}
	}
}

// T falls back to the key only for a key no catalogue has, never for a
// language: an unknown language reads English.
func TestT(t *testing.T) {
	if got := T(i18n.Thai, "nav.lesson"); got != "บทเรียน" {
		t.Errorf("Thai: %q", got)
	}
	if got := T("fr", "nav.lesson"); got != "Lesson" {
		t.Errorf("unknown language: %q", got)
	}
	if got := T(i18n.English, "no.such.key"); got != "no.such.key" {
		t.Errorf("unknown key: %q", got)
	}
}

// The scripts say only words the catalogue has, and the catalogue keeps
// no script word that no script says.
func TestScriptWords(t *testing.T) {
	files, err := filepath.Glob("static/js/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	words := wordsForScripts(i18n.English)
	for _, m := range regexp.MustCompile(`\b(?:say|word)\("([^"]+)"`).FindAllStringSubmatch(src.String(), -1) {
		if _, ok := words[m[1]]; !ok {
			t.Errorf("a script says %q, which the catalogue lacks (add %q%s)", m[1], scriptPrefix, m[1])
		}
	}
	for k := range words {
		if !strings.Contains(src.String(), `"`+k+`"`) {
			t.Errorf("no script says %s%s", scriptPrefix, k)
		}
	}
}

// Every page carries its scripts' words, in its language, as JSON no
// markup can break out of.
func TestPageCarriesScriptWords(t *testing.T) {
	for _, lang := range i18n.Langs {
		var b strings.Builder
		if err := Page("</script><b>", lang, NotFound(lang)).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(b.String(), `<script id="kubelab-words" type="application/json">`)
		if !ok {
			t.Fatalf("%s: no words in the page", lang)
		}
		body, _, _ := strings.Cut(rest, "</script>")
		var got map[string]string
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s: %v in %.200s", lang, err, body)
		}
		if want := T(lang, "js.tl.bLive"); got["tl.bLive"] != want || want == "" {
			t.Errorf("%s: tl.bLive = %q, want %q", lang, got["tl.bLive"], want)
		}
	}
}
