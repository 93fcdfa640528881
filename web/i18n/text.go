package i18n

import "encoding/json"

// Text is one piece of text in each of the site's languages.
type Text struct {
	EN string `json:"en"`
	TH string `json:"th"`
}

// Same is s in every language: names, paths and numbers.
func Same(s string) Text { return Text{s, s} }

// In is the text in lang, English where it has no translation.
func (t Text) In(lang Lang) string {
	if lang == Thai && t.TH != "" {
		return t.TH
	}
	return t.EN
}

// Plus is t followed by u, in each language.
func (t Text) Plus(u Text) Text { return Text{t.EN + u.EN, t.TH + u.TH} }

// UnmarshalJSON also reads a bare string, as English: what was stored
// before a field became bilingual (a lab step's evidence) still reads.
func (t *Text) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*t = Text{}
		return json.Unmarshal(b, &t.EN)
	}
	type plain Text
	return json.Unmarshal(b, (*plain)(t))
}
