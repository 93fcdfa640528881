package i18n

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// Every page picks its language by one rule: ?lang, then the cookie, then
// Accept-Language, then English; a source naming no language of the site
// leaves the choice to the next.
func TestOf(t *testing.T) {
	for _, c := range []struct {
		name, query, cookie, accept string
		want                        Lang
	}{
		{"nothing", "", "", "", English},
		{"browser", "", "", "th-TH,th;q=0.9,en;q=0.8", Thai},
		{"browser's first known", "", "", "fr-FR,th;q=0.5", Thai},
		{"browser's order", "", "", "en-US,th;q=0.5", English},
		{"browser's q, not its order", "", "", "en;q=0.2,th;q=0.9", Thai},
		{"browser refuses", "", "", "th;q=0,fr", English},
		{"browser malformed", "", "", ";;;=,", English},
		{"wildcard", "", "", "*", English},
		{"cookie beats browser", "", "en", "th", English},
		{"cookie beats browser th", "", "th", "en", Thai},
		{"query beats cookie", "en", "th", "th", English},
		{"query beats cookie th", "th", "en", "en", Thai},
		{"query's case and region", "TH-th", "", "", Thai},
		{"unknown query: cookie decides", "xx", "th", "en", Thai},
		{"unknown query and cookie: browser decides", "fr", "de", "th", Thai},
		{"not a tag", "th<script>", "", "", English},
		{"thai is not a tag of th", "thai", "", "", English},
		{"und is no choice", "und", "th", "", Thai},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := "/lesson/"
			if c.query != "" {
				target += "?lang=" + url.QueryEscape(c.query)
			}
			r := httptest.NewRequest("GET", target, nil)
			if c.cookie != "" {
				r.AddCookie(&http.Cookie{Name: Cookie, Value: c.cookie})
			}
			if c.accept != "" {
				r.Header.Set("Accept-Language", c.accept)
			}
			if got := Of(r); got != c.want {
				t.Errorf("?lang=%q, cookie %q, Accept-Language %q: %s, want %s", c.query, c.cookie, c.accept, got, c.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Lang{
		"th": Thai, "TH": Thai, "th-TH": Thai, "th_TH": Thai, "en": English, "en-GB": English,
		"": English, "xx": English, "thx": English, "🙂": English,
	} {
		if got := Parse(in); got != want {
			t.Errorf("Parse(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestName(t *testing.T) {
	for _, l := range Langs {
		if l.Name() == "" || l.Name() == string(l) {
			t.Errorf("%s has no name of its own: %q", l, l.Name())
		}
	}
}
