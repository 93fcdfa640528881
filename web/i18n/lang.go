// Package i18n is kubelab's one way to speak two languages: the Lang type,
// the Text type (a string in English and in Thai), the one rule that picks
// a request's language, and Catalog, the one way to declare a page's own
// words. It imports nothing of kubelab's, so that labs and quiz, which
// must stay light, can write their content in its Text.
package i18n

import (
	"net/http"

	"golang.org/x/text/language"
)

// Lang is one of the site's languages, named by its BCP 47 base subtag.
type Lang string

// The site's languages.
const (
	English Lang = "en"
	Thai    Lang = "th"
)

// Langs are the site's languages, the default first.
var Langs = []Lang{English, Thai}

// Name is the language's name in that language, for the language switch.
func (l Lang) Name() string {
	switch l {
	case Thai:
		return "ไทย"
	case English:
		return "English"
	}
	return string(l)
}

// Cookie is the cookie that remembers the reader's chosen language, and
// Query the address's parameter that names a page's language.
const (
	Cookie = "lang"
	Query  = "lang"
)

// Parse is the site's language for a tag such as "th", "TH" or "th-TH";
// English for anything it does not know.
func Parse(tag string) Lang {
	if l, ok := match(tag); ok {
		return l
	}
	return English
}

// Of is the language of the page r asks for, chosen the same way on
// every page (lesson, labs, quizzes, sign-in, dashboard, terminal):
//
//  1. ?lang= in the address, so that a shared link opens in its language;
//  2. the cookie, the choice the reader made with the language switch;
//  3. Accept-Language, the browser's preferences, best first;
//  4. English.
//
// A source that names no language of the site says nothing, and the next
// one decides: a ?lang=fr link opens a Thai reader's page in Thai, as an
// Accept-Language of "fr, th" does.
func Of(r *http.Request) Lang {
	if l, ok := match(r.URL.Query().Get(Query)); ok {
		return l
	}
	if ck, err := r.Cookie(Cookie); err == nil {
		if l, ok := match(ck.Value); ok {
			return l
		}
	}
	// ParseAcceptLanguage orders the tags by their q, drops those with
	// q=0, and refuses a malformed header, which then says nothing.
	tags, _, _ := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	for _, t := range tags {
		if l, ok := matchTag(t); ok {
			return l
		}
	}
	return English
}

// match is the site's language whose base subtag s has, if any.
func match(s string) (Lang, bool) {
	if s == "" {
		return "", false
	}
	t, err := language.Parse(s)
	if err != nil {
		return "", false
	}
	return matchTag(t)
}

func matchTag(t language.Tag) (Lang, bool) {
	// Only an explicit base counts: Base guesses one for "und" or a bare
	// script, and a guess is not the reader's choice.
	base, conf := t.Base()
	if conf != language.Exact {
		return "", false
	}
	for _, l := range Langs {
		if base.String() == string(l) {
			return l, true
		}
	}
	return "", false
}
