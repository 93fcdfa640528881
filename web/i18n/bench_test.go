package i18n

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The rule runs on every page view; it must cost next to nothing beside
// the page's render budget of 2 ms.
func BenchmarkOf(b *testing.B) {
	r := httptest.NewRequest("GET", "/lesson/", nil)
	r.AddCookie(&http.Cookie{Name: "theme", Value: "dark"})
	r.Header.Set("Accept-Language", "fr-FR,fr;q=0.9,th;q=0.8,en;q=0.7")
	for b.Loop() {
		if Of(r) != Thai {
			b.Fatal("not Thai")
		}
	}
}
