package webui_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// pageBudget is the most a lesson page may weigh with everything it loads.
const pageBudget = 150 * 1024

// testPageWeight loads every lesson page as a browser would (the HTML, its
// stylesheet, icon and scripts, following the modules' imports) and checks
// the total against the budget.
func testPageWeight(t *testing.T, lab *apitest.Server) {
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

// testPagesAreServedCompressed: pages and assets go gzipped to a browser
// that accepts it, versioned assets with a year's cache lifetime; the API
// and the health checks are served as kube-apiserver serves them.
func testPagesAreServedCompressed(t *testing.T, lab *kubelabtest.Lab) {
	get := func(path string) (*http.Response, int) {
		t.Helper()
		req, _ := http.NewRequest("GET", lab.URL()+path, nil)
		// Set by hand, so that the transport does not undo the encoding.
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, len(b)
	}
	html := regexp.MustCompile(`src="(/static/js/main\.js\?v=[^"]+)"`).FindStringSubmatch(func() string {
		resp, err := http.Get(lab.URL() + "/lesson/gone")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}())
	if len(html) < 2 {
		t.Fatal("no versioned main.js on the page")
	}
	for _, path := range []string{"/lesson/gone", "/static/app.css", strings.ReplaceAll(html[1], "&amp;", "&")} {
		resp, n := get(path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: %d, Content-Encoding %q", path, resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		t.Logf("%s: %d bytes on the wire, gzipped", path, n)
	}
	if resp, _ := get(strings.ReplaceAll(html[1], "&amp;", "&")); !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("a versioned asset's Cache-Control: %q", resp.Header.Get("Cache-Control"))
	}
	for _, path := range []string{"/api/v1/namespaces/internals-demo/pods", "/readyz"} {
		if resp, _ := get(path); resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: Content-Encoding %q, want none", path, resp.Header.Get("Content-Encoding"))
		}
	}
}
