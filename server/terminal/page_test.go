package terminal_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// TestPageStringsInBothLanguages: every string of the terminal's page and
// dock is translated (web.T shows a missing key as the key itself), and
// the Thai page is in Thai.
func TestPageStringsInBothLanguages(t *testing.T) {
	key := regexp.MustCompile(`\b(term|own)\.[a-zA-Z]+\b`)
	for _, lang := range i18n.Langs {
		for _, classroom := range []bool{false, true} {
			var b strings.Builder
			info := web.TerminalInfo{Lang: lang, Classroom: classroom, Kubeconfig: "/data dir/kubeconfig"}
			if err := web.TerminalView(info).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			if err := web.TerminalDock(lang).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			if k := key.FindString(html); k != "" {
				t.Errorf("%s: untranslated %s", lang, k)
			}
			if lang == i18n.Thai && !strings.Contains(html, "เทอร์มินัล") {
				t.Errorf("the Thai page is not in Thai")
			}
			if !classroom && !strings.Contains(html, "export KUBECONFIG=&#39;/data dir/kubeconfig&#39;") {
				t.Errorf("local mode: no export line with the quoted path")
			}
			if classroom && !strings.Contains(html, `action="/kubelab/v1/kubeconfig"`) {
				t.Errorf("classroom: no kubeconfig download")
			}
		}
	}
}
