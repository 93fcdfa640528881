package web

import (
	"net/http"
	"strings"
)

// LangCookie remembers the reader's chosen language, for every page of
// the site.
const LangCookie = "lang"

// LangOf is the language of a page, chosen the same way on every page
// (lesson, labs, quizzes, sign-in, dashboard, terminal): a ?lang= in the
// address first, so a shared link opens in its language; then the
// choice the reader made (the cookie); then the browser's preference
// (Accept-Language, in its order); else English.
func LangOf(r *http.Request) string {
	if l := r.URL.Query().Get("lang"); l != "" {
		return matchLang(l)
	}
	if ck, err := r.Cookie(LangCookie); err == nil && ck.Value != "" {
		return matchLang(ck.Value)
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if l, ok := knownLang(tag); ok {
			return l
		}
	}
	return Langs[0]
}

// matchLang is the site's language for a tag such as "th" or "th-TH",
// English for anything else.
func matchLang(tag string) string {
	if l, ok := knownLang(tag); ok {
		return l
	}
	return Langs[0]
}

func knownLang(tag string) (string, bool) {
	base, _, _ := strings.Cut(strings.TrimSpace(tag), "-")
	for _, l := range Langs {
		if strings.EqualFold(base, l) {
			return l, true
		}
	}
	return "", false
}
