package web

import (
	"context"
	"html"
	"io"

	"github.com/a-h/templ"
	"github.com/kubelab/kubelab/web/i18n"
)

// LiveCommands are the lesson's commands that "Run it live" can run; the
// server implements each one.
var LiveCommands = map[string]bool{
	"list-table": true, "list-rv": true, "watch-pods": true, "label-pod": true,
	"watch-bookmarks": true, "watch-gone": true, "apis": true, "openapi": true,
	"etcd-get": true,
}

// inlineText renders lesson text with its inline marks, escaped.
func inlineText(text string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for _, s := range Inline(text) {
			open, closing := "", ""
			switch s.Kind {
			case '`':
				open, closing = "<code>", "</code>"
			case '*':
				open, closing = "<strong>", "</strong>"
			case '_':
				open, closing = "<em>", "</em>"
			}
			if _, err := io.WriteString(w, open+html.EscapeString(s.Text)+closing); err != nil {
				return err
			}
		}
		return nil
	})
}

// SectionPage is Page for the pages of one section of the top navigation
// ("quiz"), which it marks as current: the layout other packages' pages
// are given.
func SectionPage(section string) func(title string, lang i18n.Lang, body templ.Component) templ.Component {
	return func(title string, lang i18n.Lang, body templ.Component) templ.Component {
		return PageWith(Meta{Title: title, Lang: lang, Section: section}, body)
	}
}
