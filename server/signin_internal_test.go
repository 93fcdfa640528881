package server

import "testing"

// Every word of the sign-in page exists in English and in Thai.
func TestSigninCatalogueIsWhole(t *testing.T) {
	t.Parallel()
	for _, m := range signinText.Missing() {
		t.Error(m)
	}
}
