package terminal

import "testing"

// Every refusal the terminal can say exists in English and in Thai.
func TestCatalogueIsWhole(t *testing.T) {
	for _, m := range messages.Missing() {
		t.Error(m)
	}
}
