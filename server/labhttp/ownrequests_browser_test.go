package labhttp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/lab"
)

// TestKubelabsOwnRequestsPassNoStep: a student starts every lab, then
// only opens pages. The watch timeline lists and watches their pods, the
// inspector loads keys and checks, with a denied list of secrets, what
// they may read, and an admin changes one of their pods meanwhile;
// none of that is the student's doing, so no step passes.
func TestKubelabsOwnRequestsPassNoStep(t *testing.T) {
	ctx := browsertest.Start(t)
	lb := kubelabtest.Start(t, classroomMode)
	browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(lb.URL()+"/lesson/request-path"))
	browsertest.Submit(t, ctx, "join", "/lesson/request-path",
		chromedp.SetValue(chromedp.CSS(`#name`), "Pat"),
		chromedp.Click(chromedp.CSS(`form[action="/signin"] button`)))
	browsertest.WaitJS(t, ctx, "signed in", `location.pathname === "/lesson/request-path" && !document.querySelector("[data-account]").hidden`)

	labs := lab.All()
	for _, l := range labs {
		browsertest.Eval[bool](t, ctx, `(window.started = window.started || {}, fetch("/kubelab/v1/labs/`+l.ID+`/start", {method: "POST", credentials: "same-origin"}).then(r => window.started["`+l.ID+`"] = r.status), true)`)
	}
	browsertest.WaitJS(t, ctx, "every lab started", `Object.values(window.started || {}).filter(s => s === 200).length === `+itoaInt(len(labs)))

	for _, page := range []string{"/lesson/request-path", "/lesson/resource-version", "/lesson/etcd", "/lesson/extending", "/lesson/model", "/labs", "/labs/watch"} {
		browsertest.Do(t, ctx, "open "+page, chromedp.Navigate(lb.URL()+page))
		browsertest.WaitJS(t, ctx, "the page's live views on "+strings.ReplaceAll(page, "/", " "), `document.readyState === "complete" && [...document.querySelectorAll(".tracer .conn, .timeline .conn, .lab-meta .conn")].every(c => c.classList.contains("live"))`)
	}
	// The inspector's page: its keys and its access check.
	browsertest.Do(t, ctx, "open the etcd page", chromedp.Navigate(lb.URL()+"/lesson/etcd"))
	browsertest.WaitJS(t, ctx, "the inspector's keys", `document.querySelectorAll("[data-keys] [data-key]").length > 0`)
	// The timeline, on the live lab page, while an admin changes the
	// student's pod: its lanes list, watch, and see the MODIFIED.
	browsertest.Do(t, ctx, "open the live lab", chromedp.Navigate(lb.URL()+"/lab"))
	browsertest.WaitJS(t, ctx, "both lanes watching", `[...document.querySelectorAll(".event-log li")].filter(l => l.textContent.includes("WATCH")).length >= 2`)
	ns := browsertest.Eval[string](t, ctx, `document.querySelector(".timeline").dataset.ns`)
	if _, err := lb.Clientset(t).CoreV1().Pods(ns).Patch(context.Background(), "ssa-demo", types.MergePatchType, []byte(`{"metadata":{"labels":{"by":"admin"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the admin's label: %v", err)
	}
	browsertest.WaitJS(t, ctx, "the MODIFIED on the timeline", `[...document.querySelectorAll(".event-log li")].some(l => l.textContent.includes("[A]MODIFIED pod/ssa-demo"))`)
	time.Sleep(time.Second) // let the lab service look at what happened

	for _, l := range labs {
		browsertest.Eval[bool](t, ctx, `(window.view = null, fetch("/kubelab/v1/labs/`+l.ID+`", {credentials: "same-origin"}).then(r => r.json()).then(j => window.view = j), true)`)
		browsertest.WaitJS(t, ctx, l.ID+"'s progress", `window.view !== null`)
		var v struct {
			Steps []struct{ ID, State string }
		}
		if err := json.Unmarshal([]byte(browsertest.Eval[string](t, ctx, `JSON.stringify(window.view)`)), &v); err != nil || len(v.Steps) == 0 {
			t.Fatalf("%s: %v", l.ID, err)
		}
		if v.Steps[0].State != "current" {
			t.Errorf("%s: step %s is %s after page loads alone", l.ID, v.Steps[0].ID, v.Steps[0].State)
		}
	}
}

func itoaInt(n int) string { b, _ := json.Marshal(n); return string(b) }
