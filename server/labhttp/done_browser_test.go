package labhttp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// A lab's end, in the browser: the last step passes while the page is
// open, and the page shows the lab done, what was proved and the next
// lab; the labs index shows each lab's progress; "Do it again" starts the
// steps over, and the index keeps that the lab was finished. In English
// and Thai, light and dark, on a desktop and a 390 px phone.
func TestLabDoneAndAgainInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lb := kubelabtest.Start(t)

	browsertest.Do(t, ctx, "open the discovery lab", chromedp.Navigate(lb.URL()+"/labs/discovery?lang=en"))
	browsertest.WaitJS(t, ctx, "the start button", `document.querySelector(".lab-start button") !== null`)
	browsertest.Submit(t, ctx, "start it", "/labs/discovery", browsertest.Press(".lab-start button"))
	// The page before the start shows the first step current too: wait
	// for the started lab's page, which has the check form.
	browsertest.WaitJS(t, ctx, "the first step current, live", `document.querySelector("form.lab-check") !== null && document.querySelector('li[data-step="groups"]')?.dataset.state === "current" && document.querySelector(".lab-meta .conn.live") !== null`)
	if browsertest.Eval[bool](t, ctx, `!document.querySelector("[data-done-panel]").hidden`) {
		t.Fatal("the lab shows done before any step passed")
	}
	localKubectl(t, lb, "get", "--raw", "/apis")
	browsertest.WaitJS(t, ctx, "the first step passed", `document.querySelector('li[data-step="groups"]').dataset.state === "passed"`)
	if browsertest.Eval[bool](t, ctx, `!document.querySelector("[data-done-panel]").hidden`) {
		t.Fatal("the lab shows done with a step to go")
	}
	localKubectl(t, lb, "explain", "pod.spec.containers.image")
	browsertest.WaitJS(t, ctx, "the lab done, live", `document.querySelector(".lab-page").dataset.done === "true" && !document.querySelector("[data-done-panel]").hidden && document.querySelector("form.lab-check").hidden`)
	proved := browsertest.Eval[string](t, ctx, `document.querySelector("[data-done-panel] .proved").textContent`)
	if !strings.Contains(proved, "/apis") || !strings.Contains(proved, "/openapi/v3") {
		t.Errorf("what was proved: %q", proved)
	}
	// Discovery is the last lab: the panel leads back to all of them.
	if next := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll("[data-done-panel] a.btn.primary")].map(a => (a.rel || "") + " " + a.getAttribute("href")).join(", ")`); next != " /labs?lang=en" {
		t.Errorf("after the last lab, the panel's way on: %q, want the labs' index", next)
	}
	browsertest.ScrollTo(t, ctx, "[data-done-panel]")
	browsertest.Shot(t, ctx, "lab-done-en")
	accessible(t, ctx, "the done lab")

	// Another lab, half done, for the index.
	browsertest.Eval[bool](t, ctx, `(window.started = null, fetch("/kubelab/v1/labs/bookmarks/start", {method: "POST"}).then(r => window.started = r.status), true)`)
	browsertest.WaitJS(t, ctx, "bookmarks started", `window.started === 200`)
	localKubectl(t, lb, "get", "--raw", "/api/v1/namespaces/internals-demo/pods")
	browsertest.Do(t, ctx, "open the labs", chromedp.Navigate(lb.URL()+"/labs?lang=en"))
	card := func(id string) string {
		return browsertest.Eval[string](t, ctx, `document.querySelector('.lab-card a[href^="/labs/`+id+`?"]').closest(".lab-card").textContent`)
	}
	eventually.Holds(t, "the index's progress", func() (bool, error) {
		browsertest.Do(t, ctx, "reload", chromedp.Reload())
		return strings.Contains(card("bookmarks"), "1 of 4 steps done"), nil
	})
	if c := card("discovery"); !strings.Contains(c, "Done") {
		t.Errorf("the discovery card: %q", c)
	}
	if v := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll(".card-progress")].map(p => p.value + "/" + p.max).join(" ")`); v != "1/4 2/2" {
		t.Errorf("progress bars %q", v)
	}
	browsertest.ScrollTo(t, ctx, `.lab-card a[href^="/labs/bookmarks?"]`)
	browsertest.Shot(t, ctx, "labs-progress-en")
	accessible(t, ctx, "the index with progress")

	// Thai, dark, on a phone.
	browsertest.Do(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lb.URL()+"/labs?lang=th"))
	browsertest.WaitJS(t, ctx, "the Thai index", `document.documentElement.lang === "th" && document.querySelectorAll(".lab-card").length === 7`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	if c := card("bookmarks"); !strings.Contains(c, "ทำแล้ว 1 จาก 4 ขั้น") {
		t.Errorf("the Thai bookmarks card: %q", c)
	}
	browsertest.NoWiderThan(t, ctx, "the Thai labs index", 390)
	browsertest.ScrollTo(t, ctx, `.lab-card a[href^="/labs/bookmarks?"]`)
	browsertest.Shot(t, ctx, "labs-progress-th-dark-phone")
	accessible(t, ctx, "the Thai index, dark, on a phone")

	browsertest.Do(t, ctx, "the done lab in Thai", chromedp.Navigate(lb.URL()+"/labs/discovery?lang=th"))
	browsertest.WaitJS(t, ctx, "the done panel in Thai", `!document.querySelector("[data-done-panel]").hidden && document.querySelector("[data-done-panel] h2").textContent.includes("แล็บนี้เสร็จแล้ว")`)
	if proved := browsertest.Eval[string](t, ctx, `document.querySelector("[data-done-panel] .proved").textContent`); !strings.Contains(proved, "get /apis → HTTP 200 เวลา") {
		t.Errorf("what was proved, in Thai: %q", proved)
	}
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	browsertest.ScrollTo(t, ctx, "[data-done-panel]")
	browsertest.NoWiderThan(t, ctx, "the Thai done lab", 390)
	browsertest.Shot(t, ctx, "lab-done-th-dark-phone")
	accessible(t, ctx, "the Thai done lab, dark, on a phone")

	// Do it again: the steps start over, and count only what comes next.
	browsertest.Submit(t, ctx, "do it again", "/labs/discovery", browsertest.Press(".lab-restart button"))
	browsertest.WaitJS(t, ctx, "the lab started over", `document.querySelector(".lab-page")?.dataset.done === "false" && document.querySelector('li[data-step="groups"]')?.dataset.state === "current" && document.querySelector("[data-done-panel]").hidden && document.querySelector(".lab-meta .conn.live") !== null`)
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('li.step[data-state="passed"]').length`); n != 0 {
		t.Errorf("%d steps passed after starting over", n)
	}
	browsertest.Do(t, ctx, "the index again", chromedp.Navigate(lb.URL()+"/labs?lang=th"))
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	if c := card("discovery"); !strings.Contains(c, "เคยทำเสร็จมาแล้ว 1 ครั้ง") || !strings.Contains(c, "ทำแล้ว 0 จาก 2 ขั้น") {
		t.Errorf("the discovery card after doing it again: %q", c)
	}
	browsertest.ScrollTo(t, ctx, `.lab-card a[href^="/labs/discovery?"]`)
	browsertest.Shot(t, ctx, "labs-again-th-dark-phone")
	// The step passes again from a new request, not the old one.
	localKubectl(t, lb, "get", "--raw", "/apis")
	browsertest.Do(t, ctx, "the lab again", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(lb.URL()+"/labs/discovery?lang=en"))
	browsertest.WaitJS(t, ctx, "the first step passed again", `document.querySelector('li[data-step="groups"]')?.dataset.state === "passed" && document.querySelector('li[data-step="openapi"]').dataset.state === "current"`)
}

// A label that changed nothing stored: the watch lab's label step says,
// live and in the student's language, that this is why it has not passed;
// a label that changes something passes it and the reason goes.
func TestLabSaysWhyALabelDidNotCount(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	lb := kubelabtest.Start(t)
	browsertest.Do(t, ctx, "open the watch lab in Thai", chromedp.Navigate(lb.URL()+"/labs/watch?lang=th"))
	browsertest.WaitJS(t, ctx, "the start button", `document.querySelector(".lab-start button") !== null`)
	browsertest.Submit(t, ctx, "start it", "/labs/watch", browsertest.Press(".lab-start button"))
	browsertest.WaitJS(t, ctx, "the first step current, live", `document.querySelector('li[data-step="watch-pods"]')?.dataset.state === "current" && document.querySelector(".lab-meta .conn.live") !== null`)
	localKubectl(t, lb, "-n", "internals-demo", "label", "pod", "ssa-demo", "demo-round=why", "--overwrite")
	localKubectl(t, lb, "get", "--raw", "/api/v1/namespaces/internals-demo/pods?watch=1&timeoutSeconds=1")
	browsertest.WaitJS(t, ctx, "the label step current", `document.querySelector('li[data-step="modify"]').dataset.state === "current"`)
	if !browsertest.Eval[bool](t, ctx, `document.querySelector('li[data-step="modify"] [data-why]').hidden`) {
		t.Fatal("a reason shown before the student changed anything")
	}
	localKubectl(t, lb, "-n", "internals-demo", "patch", "pod", "ssa-demo", "--type=merge", "-p", `{"metadata":{"labels":{"demo-round":"why"}}}`)
	browsertest.WaitJS(t, ctx, "why, in Thai", `!document.querySelector('li[data-step="modify"] [data-why]').hidden && document.querySelector('li[data-step="modify"] [data-why]').textContent.includes("ไม่ได้เปลี่ยนสิ่งที่เก็บไว้")`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	browsertest.ScrollTo(t, ctx, `li[data-step="modify"]`)
	browsertest.Shot(t, ctx, "lab-why-th-dark")
	accessible(t, ctx, "the reason, in Thai, dark")

	browsertest.Do(t, ctx, "English, on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lb.URL()+"/labs/watch?lang=en"))
	browsertest.WaitJS(t, ctx, "why, in English", `document.querySelector('li[data-step="modify"] [data-why]')?.textContent.includes("changed nothing stored") && document.querySelector(".lab-meta .conn.live") !== null`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "light", true)`)
	browsertest.ScrollTo(t, ctx, `li[data-step="modify"]`)
	browsertest.NoWiderThan(t, ctx, "the reason on a phone", 390)
	browsertest.Shot(t, ctx, "lab-why-en-phone")
	accessible(t, ctx, "the reason on a phone")

	localKubectl(t, lb, "-n", "internals-demo", "label", "pod", "ssa-demo", "demo-round=changed", "--overwrite")
	browsertest.WaitJS(t, ctx, "the label step passed, its reason gone", `document.querySelector('li[data-step="modify"]').dataset.state === "passed" && document.querySelector('li[data-step="modify"] [data-why]').hidden`)
}

// accessible fails for axe-core's serious or critical violations on the
// page as it is now.
func accessible(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	for _, v := range browsertest.Axe(t, ctx) {
		t.Errorf("%s: %s", what, v)
	}
}
