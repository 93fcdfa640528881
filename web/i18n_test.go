package web

import (
	"testing"

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
