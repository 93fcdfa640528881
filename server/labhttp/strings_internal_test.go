package labhttp

import (
	"testing"
	"time"

	"github.com/kubelab/kubelab/web/i18n"
)

// Every word of the labs' pages and the dashboard exists in English and
// in Thai.
func TestCatalogueIsWhole(t *testing.T) {
	for _, m := range texts.Missing() {
		t.Error(m)
	}
}

// A duration in a sentence is said in words, in the page's language:
// --stuck-after=2m showed "2m0s" in a Thai sentence.
func TestSpanSaysDurationsInWords(t *testing.T) {
	for _, tc := range []struct {
		d      time.Duration
		en, th string
	}{
		{2 * time.Minute, "2 min", "2 นาที"},
		{90 * time.Minute, "1 h 30 min", "1 ชั่วโมง 30 นาที"},
		{45 * time.Second, "45 s", "45 วินาที"},
		{0, "0 s", "0 วินาที"},
	} {
		if got := span(tc.d, ui(i18n.English)); got != tc.en {
			t.Errorf("%s in English: %q, want %q", tc.d, got, tc.en)
		}
		if got := span(tc.d, ui(i18n.Thai)); got != tc.th {
			t.Errorf("%s in Thai: %q, want %q", tc.d, got, tc.th)
		}
	}
}
