package labhttp

import "testing"

// Every word of the labs' pages and the dashboard exists in English and
// in Thai.
func TestCatalogueIsWhole(t *testing.T) {
	for _, m := range texts.Missing() {
		t.Error(m)
	}
}
