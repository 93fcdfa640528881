package quizhttp

import "testing"

// Every word of the quiz pages, every reveal policy's note and every
// error page's title exists in English and in Thai.
func TestCatalogueIsWhole(t *testing.T) {
	t.Parallel()
	for _, m := range uiText.Missing() {
		t.Error(m)
	}
}
