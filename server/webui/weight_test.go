package webui_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// pageBudget is the most a lesson page may weigh with everything it loads.
const pageBudget = 150 * 1024

// TestPageWeight loads every lesson page as a browser would (the HTML, its
// stylesheet, icon and scripts, following the modules' imports) and checks
// the total against the budget.
func TestPageWeight(t *testing.T) {
	lab := kubelabtest.Start(t)
	fetch := func(path string) string {
		t.Helper()
		resp, err := http.Get(lab.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	assets := regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`)
	imports := regexp.MustCompile(`from "\./([^"]+)"`)
	for _, page := range []string{"/lesson/request-path", "/lesson/resource-version", "/lesson/gone", "/lesson/etcd", "/lesson/extending", "/lesson/model", "/lab"} {
		html := fetch(page)
		total := len(html)
		seen := map[string]bool{}
		var queue []string
		for _, m := range assets.FindAllStringSubmatch(html, -1) {
			queue = append(queue, strings.ReplaceAll(m[1], "&amp;", "&"))
		}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			key, _, _ := strings.Cut(p, "?")
			if seen[key] {
				continue
			}
			seen[key] = true
			body := fetch(p)
			total += len(body)
			if strings.HasSuffix(key, ".js") {
				for _, m := range imports.FindAllStringSubmatch(body, -1) {
					queue = append(queue, "/static/js/"+m[1])
				}
			}
		}
		t.Logf("%s: %d bytes in %d files", page, total, len(seen)+1)
		if total > pageBudget {
			t.Errorf("%s weighs %d bytes, over the %d budget", page, total, pageBudget)
		}
		if len(seen) < 8 {
			t.Errorf("%s: only %d assets found; the test no longer sees the page's scripts", page, len(seen))
		}
	}
}
