package labhttp_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
)

// TestRoomSummaryFiltersAndOrders: the room had no counts, no filter, no
// search and one order. Now its summary counts each state and shows only
// one when pressed, a search finds a student by name as typed, the order
// can be changed, and each holds through the live redraws.
func TestRoomSummaryFiltersAndOrders(t *testing.T) {
	t.Parallel()
	lab := classOfSeven(t)
	ctx := browsertest.Start(t)
	browsertest.SignInToDashboard(t, ctx, lab.URL(), instructorToken)
	browsertest.WaitJS(t, ctx, "the class, live", `document.querySelector(".dashboard .conn.live") !== null && document.querySelectorAll("tr[data-user]").length === 7`)
	browsertest.Eval[bool](t, ctx, `(window.sameDashboard = true, document.documentElement.dataset.theme = "light", true)`)
	summary := `[...document.querySelectorAll("[data-filter]")].map(b => b.textContent.replace(/\s+/g, " ").trim()).join(" · ")`
	if got, want := browsertest.Eval[string](t, ctx, summary), "1 stuck · 2 not started · 3 working · 1 done"; got != want {
		t.Errorf("the summary: %q, want %q", got, want)
	}
	shown := `[...document.querySelectorAll("tr[data-user]")].filter(r => !r.hidden).map(r => r.dataset.name).join(", ")`
	if got, want := browsertest.Eval[string](t, ctx, shown), "Xavier, Yuki, Ann, Bea, émile, Zed, สมชาย ใจดี"; got != want {
		t.Errorf("the rows: %q, want %q", got, want)
	}
	browsertest.Do(t, ctx, "show only the stuck", browsertest.Press(`[data-filter="stuck"]`))
	browsertest.WaitJS(t, ctx, "only Xavier, pressed", shown+` === "Xavier" && document.querySelector('[data-filter="stuck"]').getAttribute("aria-pressed") === "true"`)
	browsertest.Do(t, ctx, "everyone again", browsertest.Press(`[data-filter="stuck"]`))
	browsertest.WaitJS(t, ctx, "all seven", `document.querySelectorAll("tr[data-user]:not([hidden])").length === 7`)
	browsertest.Do(t, ctx, "find the Thai name", browsertest.Fill(`[data-search]`, "สมชาย"))
	browsertest.WaitJS(t, ctx, "only สมชาย ใจดี, as typed", shown+` === "สมชาย ใจดี" && document.querySelector("tr[data-user]:not([hidden]) [data-display-name]").textContent === "สมชาย ใจดี"`)
	browsertest.Do(t, ctx, "clear the search", browsertest.Fill(`[data-search]`, ""))
	browsertest.Eval[bool](t, ctx, `(e => { e.value = "name"; return e.dispatchEvent(new Event("change")); })(document.querySelector("[data-sort]"))`)
	browsertest.WaitJS(t, ctx, "by name, as a reader orders names", shown+` === "Ann, Bea, émile, Xavier, Yuki, Zed, สมชาย ใจดี"`)
	browsertest.Eval[bool](t, ctx, `(e => { e.value = "attention"; return e.dispatchEvent(new Event("change")); })(document.querySelector("[data-sort]"))`)
	browsertest.WaitJS(t, ctx, "the server's order again", shown+` === "Xavier, Yuki, Ann, Bea, émile, Zed, สมชาย ใจดี"`)
	browsertest.Do(t, ctx, "show only the working", browsertest.Press(`[data-filter="working"]`))
	// A live redraw (another student joins) keeps the filter and counts anew.
	student(t, lab, "Cho")
	browsertest.WaitJS(t, ctx, "the newcomer counted, the filter kept", `document.querySelectorAll("tr[data-user]").length === 8 && document.querySelector('[data-filter="not-started"] [data-count]').textContent === "3" && `+shown+` === "émile, Zed, สมชาย ใจดี"`)
	browsertest.Do(t, ctx, "everyone again", browsertest.Press(`[data-filter="working"]`))
	if !browsertest.Eval[bool](t, ctx, `window.sameDashboard === true`) {
		t.Fatal("the dashboard reloaded")
	}
	browsertest.NoWiderThan(t, ctx, "the room", 1280)
	browsertest.Shot(t, ctx, "room-summary-en")
	browsertest.Do(t, ctx, "Thai, dark, phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lab.URL()+"/labs/dashboard?lang=th"))
	browsertest.WaitJS(t, ctx, "the summary in Thai", `document.documentElement.lang === "th" && document.querySelector('[data-filter="working"]').textContent.includes("กำลังทำ")`)
	browsertest.Eval[bool](t, ctx, `(document.documentElement.dataset.theme = "dark", true)`)
	browsertest.NoWiderThan(t, ctx, "the room", 390)
	browsertest.Shot(t, ctx, "room-summary-th-dark-phone")
}
