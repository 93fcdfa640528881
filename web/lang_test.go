package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Every page picks its language by one rule: ?lang, then the cookie, then
// Accept-Language, then English.
func TestLangOf(t *testing.T) {
	for _, c := range []struct {
		query, cookie, accept, want string
	}{
		{"", "", "", "en"},
		{"", "", "th-TH,th;q=0.9,en;q=0.8", "th"},
		{"", "", "fr-FR,th;q=0.5", "th"},
		{"", "", "en-US,th;q=0.5", "en"},
		{"", "en", "th", "en"},
		{"", "th", "en", "th"},
		{"en", "th", "th", "en"},
		{"th", "en", "en", "th"},
		{"TH-th", "", "", "th"},
		{"xx", "th", "th", "en"},
	} {
		r := httptest.NewRequest("GET", "/lesson/?lang="+c.query, nil)
		if c.query == "" {
			r = httptest.NewRequest("GET", "/lesson/", nil)
		}
		if c.cookie != "" {
			r.AddCookie(&http.Cookie{Name: LangCookie, Value: c.cookie})
		}
		r.Header.Set("Accept-Language", c.accept)
		if got := LangOf(r); got != c.want {
			t.Errorf("?lang=%q, cookie %q, Accept-Language %q: %s, want %s", c.query, c.cookie, c.accept, got, c.want)
		}
	}
}
