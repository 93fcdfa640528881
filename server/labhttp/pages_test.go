package labhttp_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server/labhttp"
)

// The pages: both languages, the site's headers, friendly pages for bad
// input, and forms that work without JavaScript.
func TestPages(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice").inBrowser()
	page := func(path string) (*http.Response, string) {
		return alice.do("GET", path, "", "", "Accept", "text/html")
	}

	resp, body := page(labhttp.PagesPath + "?lang=th")
	if resp.StatusCode != http.StatusOK || strings.Count(body, `<li class="lab-card`) != 7 || !strings.Contains(body, `lang="th"`) || !strings.Contains(body, "แล็บ") {
		t.Fatalf("list in Thai: HTTP %d\n%s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " style=") {
		t.Error("inline script or style in the page")
	}
	resp, body = page(labhttp.PagesPath + "/watch?lang=en")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `href="/lesson/resource-version#watch"`) || !strings.Contains(body, "kubectl -n alice get pods --watch") {
		t.Fatalf("lab page: HTTP %d\n%s", resp.StatusCode, body)
	}

	for path, code := range map[string]int{
		labhttp.PagesPath + "/nope":                 http.StatusNotFound,
		labhttp.PagesPath + "/nope?lang=th":         http.StatusNotFound,
		labhttp.PagesPath + "/%3Cscript%3Ealert(1)": http.StatusNotFound,
	} {
		resp, body := page(path)
		if resp.StatusCode != code || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || strings.Contains(body, "<script>alert") {
			t.Errorf("%s: HTTP %d %s\n%s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}

	// The forms, as a browser without JavaScript sends them.
	form := func(path string, v url.Values, header ...string) *http.Response {
		resp, _ := alice.do("POST", path, "application/x-www-form-urlencoded", v.Encode(), header...)
		return resp
	}
	if resp := form(labhttp.PagesPath+"/etcd/start?lang=th", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/labs/etcd?lang=th" {
		t.Fatalf("start: HTTP %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := form(labhttp.PagesPath+"/etcd/answer", url.Values{"step": {"prefix"}, "answer": {"k8s"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("answering a step that is not current: HTTP %d", resp.StatusCode)
	}
	alice.get("/ui/etcd/value?key=/registry/pods/alice/ssa-demo")
	alice.waitPassed("etcd", "read-key")
	resp = form(labhttp.PagesPath+"/etcd/answer?lang=en", url.Values{"step": {"prefix"}, "answer": {"<b>json</b>"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "answer=wrong") {
		t.Fatalf("wrong answer: HTTP %d to %q", resp.StatusCode, loc)
	}
	_, body = page(resp.Header.Get("Location"))
	if !strings.Contains(body, "Not quite") || strings.Contains(body, "<b>json</b>") {
		t.Errorf("after a wrong answer:\n%s", body)
	}
	// A form posted from another site is refused: its session cookie is
	// not honoured (the front door's 401), and the form is not either.
	resp, body = alice.do("POST", labhttp.PagesPath+"/reset", "application/x-www-form-urlencoded", "", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site reset: HTTP %d\n%s", resp.StatusCode, body)
	}
	if resp := form(labhttp.PagesPath+"/reset?lang=en", nil); resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "reset=1") {
		t.Errorf("reset: HTTP %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
