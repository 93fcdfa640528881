package web

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/web/i18n"
)

// paragraphs is the running text of a page, notes, lists and code
// samples included, without its recorded command output.
func paragraphs(p *LessonPage) string {
	var out []string
	for _, b := range p.Blocks {
		switch b.Kind {
		case Paragraph, Code:
			out = append(out, b.Text)
		case List:
			out = append(out, b.Items...)
		case Misconception:
			out = append(out, b.Body...)
		}
	}
	return strings.Join(out, "\n")
}

// TestTheLessonSaysWhatKubeDoes holds sentences a review against
// kube-apiserver 1.37.2 found wrong: each must be gone from its page, in
// both languages, and what kube does must be there. (test/commands and
// test/kubecore run the commands that show it.)
func TestTheLessonSaysWhatKubeDoes(t *testing.T) {
	lessons, err := LoadLessons()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		why, page string
		lang      i18n.Lang
		gone      []string
		there     []string
	}{
		{"a BOOKMARK comes at the cache's revision, which etcd's progress notifications move too, and may repeat it",
			"resource-version", i18n.English,
			[]string{"only when its resourceVersion is newer than what this watch has already seen", "if anything changed in the meantime", "only when the resourceVersion has moved past what the watch has seen"},
			[]string{"also with etcd's progress notifications", "a watch on a namespace where nothing changed still gets bookmarks", "two bookmarks can carry the same resourceVersion"}},
		{"a BOOKMARK comes at the cache's revision, which etcd's progress notifications move too, and may repeat it",
			"resource-version", i18n.Thai,
			[]string{"ก็ต่อเมื่อ resourceVersion ของมันใหม่กว่าที่ watch นี้เห็นแล้ว", "ถ้ามีอะไรเปลี่ยนระหว่างนั้น", "เฉพาะเมื่อ resourceVersion ขยับเลยสิ่งที่ watch เห็นแล้วเท่านั้น"},
			[]string{"ขยับตาม progress notification ของ etcd ด้วย", "watch บน namespace ที่ไม่มีอะไรเปลี่ยนจึงยังได้ bookmark", "bookmark สองตัวอาจพา resourceVersion เดียวกันมาได้"}},
		{"kube's ServiceAccount plugin mounts the account's token, the CA and the namespace, not the name only",
			"request-path", i18n.English, nil,
			[]string{"`kube-api-access-` and five random characters", "`/var/run/secrets/kubernetes.io/serviceaccount`", "`kube-root-ca.crt` ConfigMap", "downward API",
				"name: kube-api-access-", "serviceAccountToken:", "expirationSeconds: 3607", "fieldPath: metadata.namespace"}},
		{"kube's ServiceAccount plugin mounts the account's token, the CA and the namespace, not the name only",
			"request-path", i18n.Thai, nil,
			[]string{"`kube-api-access-` ตามด้วยตัวอักษรสุ่มห้าตัว", "`/var/run/secrets/kubernetes.io/serviceaccount`", "ConfigMap `kube-root-ca.crt`", "downward API",
				"name: kube-api-access-", "serviceAccountToken:", "expirationSeconds: 3607", "fieldPath: metadata.namespace"}},
		{"the watch cache follows etcd: a write made straight to etcd reaches every watcher",
			"request-path", i18n.English, nil,
			[]string{"a write made straight to etcd reaches every watcher just the same"}},
		{"the watch cache follows etcd: a write made straight to etcd reaches every watcher",
			"request-path", i18n.Thai, nil,
			[]string{"การเขียนลง etcd ตรง ๆ จึงไปถึง watcher ทุกตัวเหมือนกัน"}},
		{"the watch cache follows etcd: a write made straight to etcd reaches every watcher",
			"model", i18n.English,
			[]string{"no watcher's cache is told"},
			[]string{"a write also skips admission and validation, and still reaches every watcher"}},
		{"the watch cache follows etcd: a write made straight to etcd reaches every watcher",
			"model", i18n.Thai, nil,
			[]string{"การเขียนยังข้าม admission และ validation ด้วย แต่ก็ยังไปถึง watcher ทุกตัว"}},
	} {
		p, idx := lessons[c.lang].Page(c.page)
		if p == nil {
			t.Fatalf("no page %s", c.page)
		}
		text, page := paragraphs(p), pageText(renderLesson(t, lessons[c.lang], idx))
		for _, s := range c.gone {
			if strings.Contains(text, s) {
				t.Errorf("%s %s still says %q: %s", c.lang, c.page, s, c.why)
			}
		}
		for _, s := range c.there {
			if !strings.Contains(text, s) {
				t.Errorf("%s %s does not say %q: %s", c.lang, c.page, s, c.why)
			}
			if plain := strings.ReplaceAll(s, "`", ""); !strings.Contains(page, plain) {
				t.Errorf("%s %s: the page does not show %q", c.lang, c.page, plain)
			}
		}
	}
}

var tag = regexp.MustCompile(`<[^>]*>`)

// pageText is what a page's HTML reads as.
func pageText(page string) string {
	return html.UnescapeString(tag.ReplaceAllString(page, ""))
}
