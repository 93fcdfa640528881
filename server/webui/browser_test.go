package webui_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// kubectl runs the real kubectl as a student's own terminal would: no
// credentials, so it arrives as the same anonymous local user as the page.
func kubectl(t *testing.T, lab *kubelabtest.Lab, args ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfg, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	out, stderr, err := clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", cfg, "-s", lab.URL()}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %v: %v %s", args, err, stderr)
	}
	return out
}

// kubectlFails runs kubectl as kubectl does, expecting it to fail, and
// returns what it said.
func kubectlFails(t *testing.T, lab *kubelabtest.Lab, args ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfg, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	_, stderr, err := clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", cfg, "-s", lab.URL()}, args...)...)
	if err == nil {
		t.Fatalf("kubectl %v succeeded", args)
	}
	return stderr
}

// onlyThisHost checks that the page loaded nothing from another host.
func onlyThisHost(t *testing.T, ctx context.Context, lab *kubelabtest.Lab) {
	t.Helper()
	u, _ := url.Parse(lab.URL())
	urls := browsertest.Eval[[]string](t, ctx, `performance.getEntries().map(e => e.name).filter(n => /^[a-z]+:/.test(n))`)
	for _, s := range urls {
		if p, err := url.Parse(s); err != nil || p.Host != u.Host {
			t.Errorf("the page fetched %s from another host", s)
		}
	}
}

func TestBrowser(t *testing.T) {
	// Its own Chromium and its own server, whose seeded pods it labels and
	// whose tracer it reads; it mostly waits on the browser, so it runs
	// beside the others. The watch timeline's exercise, which pushes the
	// window, is TestBrowserWatchTimeline, on a server of its own.
	t.Parallel()
	ctx, lab := startBrowserAndLab(t)

	t.Run("OK lesson, Run it live and the tracer", func(t *testing.T) {
		browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(lab.URL()+"/lesson/request-path"))
		browsertest.WaitJS(t, ctx, "the tracer to connect", `document.querySelector(".tracer .conn.live") !== null`)
		onlyThisHost(t, ctx, lab)
		browsertest.Do(t, ctx, "run it live", browsertest.Press(`figure[data-cmd="list-table"] [data-run]`))
		browsertest.WaitJS(t, ctx, "the live response", `document.querySelector('figure[data-cmd="list-table"]').dataset.state === "done"`)
		resp := browsertest.Eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-resp').textContent`)
		req := browsertest.Eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-req').textContent`)
		if !strings.Contains(req, "GET /api/v1/namespaces/internals-demo/pods?limit=500 HTTP/1.1") || !strings.Contains(resp, "HTTP/1.1 200 OK") || !strings.Contains(resp, "ssa-demo") {
			t.Fatalf("request %q\nresponse %q", req, resp)
		}
		browsertest.ScrollTo(t, ctx, `figure[data-cmd="list-table"]`)
		browsertest.Shot(t, ctx, "run-it-live")
		browsertest.WaitJS(t, ctx, "the request in the tracer", `document.querySelector('.trace[data-verb="list"]') !== null`)
		// The student's own kubectl shows up too, and lights the flowchart to etcd.
		kubectl(t, lab, "-n", "internals-demo", "label", "pod", "web-86d8686cfb-84dk9", "traced=yes")
		browsertest.WaitJS(t, ctx, "kubectl's patch in the tracer", `document.querySelector('.trace[data-verb="patch"]') !== null`)
		browsertest.WaitJS(t, ctx, "the flowchart to light up", `document.querySelector('.flow-node[data-stage="storage"].allow') !== null && document.querySelector('.flow-node[data-stage="watch"].allow') !== null`)
		browsertest.ScrollTo(t, ctx, ".flow")
		flowTextFits(t, ctx)
		browsertest.Shot(t, ctx, "lesson-en-tracer")
		// A request RBAC or admission stops shows where and why.
		if out := kubectlFails(t, lab, "-n", "no-such-namespace", "create", "configmap", "c", "--from-literal=a=b"); !strings.Contains(out, "not found") {
			t.Fatalf("kubectl said %q", out)
		}
		browsertest.WaitJS(t, ctx, "the denied request", `document.querySelector('.trace.failed .trace-why') !== null`)
		browsertest.ScrollTo(t, ctx, ".tracer")
		browsertest.Shot(t, ctx, "tracer-denied")
	})

	t.Run("OK Thai, remembered", func(t *testing.T) {
		browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(lab.URL()+"/lesson/request-path"))
		browsertest.Do(t, ctx, "switch to Thai", browsertest.Press(`.langs a[lang="th"]`))
		browsertest.WaitJS(t, ctx, "the Thai page", `document.documentElement.lang === "th" && document.body.textContent.includes("เส้นทาง request จริง")`)
		browsertest.ScrollTo(t, ctx, ".flow")
		flowTextFits(t, ctx)
		browsertest.Shot(t, ctx, "lesson-th-flowchart")
		browsertest.Do(t, ctx, "open another page", chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
		browsertest.WaitJS(t, ctx, "Thai again", `document.documentElement.lang === "th"`)
		browsertest.Shot(t, ctx, "lesson-th")
		browsertest.Do(t, ctx, "dark theme", browsertest.Press(`[data-theme-toggle]`))
		browsertest.WaitJS(t, ctx, "dark", `document.documentElement.dataset.theme === "dark"`)
		browsertest.Do(t, ctx, "reload", chromedp.Reload())
		browsertest.WaitJS(t, ctx, "dark remembered", `document.documentElement.dataset.theme === "dark"`)
		browsertest.Shot(t, ctx, "lesson-th-dark")
		browsertest.Do(t, ctx, "open the 410 page", chromedp.Navigate(lab.URL()+"/lesson/gone"))
		browsertest.WaitJS(t, ctx, "the Thai horizons", `document.querySelector("[data-window]").textContent.includes("เริ่มที่ rv")`)
		browsertest.Do(t, ctx, "pause lane B", browsertest.Press(`.lane-ctl[data-lane="B"] [data-toggle]`))
		browsertest.ScrollTo(t, ctx, ".timeline")
		browsertest.Shot(t, ctx, "timeline-th-dark")
		browsertest.Do(t, ctx, "light theme", browsertest.Press(`[data-theme-toggle]`))
		browsertest.Do(t, ctx, "back to English", chromedp.Navigate(lab.URL()+"/lang?to=en"))
	})

	t.Run("OK XSS through a label and an annotation is inert", func(t *testing.T) {
		browsertest.Do(t, ctx, "open the watch page", chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
		evil := `<img src=x onerror="document.title='pwned'">`
		browsertest.Do(t, ctx, "type a label value", browsertest.Fill(`figure[data-cmd="label-pod"] input`, evil))
		browsertest.Do(t, ctx, "run it", browsertest.Press(`figure[data-cmd="label-pod"] [data-run]`))
		browsertest.WaitJS(t, ctx, "the 422", `document.querySelector('figure[data-cmd="label-pod"]').dataset.code === "422" && document.querySelector('figure[data-cmd="label-pod"]').dataset.state === "done"`)
		text := browsertest.Eval[string](t, ctx, `document.querySelector('figure[data-cmd="label-pod"] .live-resp').textContent`)
		if !strings.Contains(text, `<img src=x onerror=`) {
			t.Fatalf("the API's message is not shown as text: %q", text)
		}
		// The failure leads the pane, with the Status's message.
		failed := browsertest.Eval[string](t, ctx, `(f => f.hidden ? "" : f.textContent)(document.querySelector('figure[data-cmd="label-pod"] [data-failed]'))`)
		if !strings.Contains(failed, "Failed: 422 Unprocessable Entity") || !strings.Contains(failed, "<img src=x onerror=") {
			t.Fatalf("the failure is not shown at the top: %q", failed)
		}
		browsertest.ScrollTo(t, ctx, `figure[data-cmd="label-pod"]`)
		browsertest.Shot(t, ctx, "run-it-live-failed")
		// An annotation can hold anything; the inspector shows it as text.
		kubectl(t, lab, "-n", "internals-demo", "annotate", "pod", "ssa-demo", "note="+evil)
		browsertest.Do(t, ctx, "open the etcd page", chromedp.Navigate(lab.URL()+"/lesson/etcd"))
		browsertest.WaitJS(t, ctx, "the key list", `document.querySelector('[data-key="/registry/pods/internals-demo/ssa-demo"]') !== null`)
		// The list is a read, not a stream: its badge says when, in words.
		if badge := browsertest.Eval[string](t, ctx, `(b => b.className + ": " + b.textContent)(document.querySelector(".inspector [data-conn]"))`); !regexp.MustCompile(`^conn idle: read at etcd rev [1-9][0-9]*$`).MatchString(badge) {
			t.Errorf("the inspector's badge: %q", badge)
		}
		browsertest.Do(t, ctx, "pick ssa-demo", browsertest.Press(`[data-key="/registry/pods/internals-demo/ssa-demo"]`))
		browsertest.WaitJS(t, ctx, "the decoded value", `document.querySelector("[data-json]").textContent.includes("onerror") && document.querySelector(".hex-b.prefix") !== null`)
		if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("main img").length`); n != 0 {
			t.Fatalf("%d img elements were injected", n)
		}
		if title := browsertest.Eval[string](t, ctx, `document.title`); strings.Contains(title, "pwned") {
			t.Fatal("the injected handler ran")
		}
		fields := browsertest.Eval[string](t, ctx, `document.querySelector("[data-fields]").textContent`)
		for _, want := range []string{"raw", "metadata", "managedFields", "f:containers", "manager-a"} {
			if !strings.Contains(fields, want) {
				t.Errorf("decoded fields lack %q", want)
			}
		}
		browsertest.ScrollTo(t, ctx, ".inspector")
		browsertest.Shot(t, ctx, "etcd-inspector")
	})

	t.Run("OK poll vs watch", func(t *testing.T) {
		browsertest.Do(t, ctx, "open the lab", chromedp.Navigate(lab.URL()+"/lab"))
		// Nothing runs until Start: the badge says so, not "connecting".
		if badge := browsertest.Eval[string](t, ctx, `(b => b.className + ": " + b.textContent)(document.querySelector(".pollwatch [data-conn]"))`); badge != "conn idle: idle: press Start" {
			t.Errorf("the race's badge before Start: %q", badge)
		}
		browsertest.ScrollTo(t, ctx, ".pollwatch")
		browsertest.Shot(t, ctx, "lab-poll-vs-watch-idle")
		browsertest.Do(t, ctx, "start the race", browsertest.Press(`.pollwatch [data-start]`))
		browsertest.WaitJS(t, ctx, "the race to be ready", `!document.querySelector(".pollwatch [data-change]").disabled && +document.querySelector('.pollwatch [data-side="poll"] [data-requests]').textContent > 1`)
		browsertest.Do(t, ctx, "change the pod", browsertest.Press(`.pollwatch [data-change]`))
		browsertest.WaitJS(t, ctx, "both to notice", `document.querySelector(".pollwatch").dataset.done === "1"`)
		if n := browsertest.Eval[string](t, ctx, `document.querySelector('.pollwatch [data-side="watch"] [data-requests]').textContent`); n != "1" {
			t.Errorf("the watch made %s requests", n)
		}
		browsertest.ScrollTo(t, ctx, ".pollwatch")
		browsertest.Shot(t, ctx, "lab-poll-vs-watch")
	})

	t.Run("OK quiz in the site's layout", func(t *testing.T) {
		browsertest.Do(t, ctx, "open the quiz", chromedp.Navigate(lab.URL()+"/quiz"))
		browsertest.WaitJS(t, ctx, "the quiz page", `document.querySelector('.mainnav a[href="/quiz"][aria-current="page"]') !== null`)
		browsertest.Shot(t, ctx, "quiz")
	})

	t.Run("OK phone", func(t *testing.T) {
		browsertest.Do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
		browsertest.WaitJS(t, ctx, "the page", `document.querySelector(".timeline .conn.live") !== null`)
		browsertest.NoWiderThan(t, ctx, "the page", 390)
		browsertest.Shot(t, ctx, "phone")
		browsertest.Do(t, ctx, "the 410 page", chromedp.Navigate(lab.URL()+"/lesson/gone"))
		browsertest.WaitJS(t, ctx, "the timeline", `document.querySelector(".timeline").dataset.windowStart > 0`)
		browsertest.NoWiderThan(t, ctx, "the 410 page", 390)
		browsertest.ScrollTo(t, ctx, ".timeline .tl-canvas")
		browsertest.Shot(t, ctx, "timeline-phone")
	})
}

// TestBrowserWatchTimeline: on the 410 page the window moves past a paused
// watcher, which then gets 410 and relists; compaction moves etcd's
// horizon, where an exact list gets etcd's own 410. A server of its own:
// its push moves the pods' window under every watcher, and its lanes must
// see only its own changes. Serial: the push is about a hundred writes that
// the page must see done within WaitJS's 20 s, and beside the parallel
// tests' servers it once took longer.
func TestBrowserWatchTimeline(t *testing.T) {
	// The window's freshness is kube's 75 s shortened to 2 s, so that the
	// 410 exercise runs without waiting.
	ctx, lab := startBrowserAndLab(t, func(c *server.Config) { c.WatchCacheEventFreshness = 2 * time.Second })

	browsertest.Do(t, ctx, "open the 410 page", chromedp.Navigate(lab.URL()+"/lesson/gone"))
	browsertest.WaitJS(t, ctx, "both lanes to list", `[...document.querySelectorAll(".event-log li")].filter(l => l.textContent.includes("LIST")).length >= 2`)
	browsertest.WaitJS(t, ctx, "the window's horizon", `document.querySelector(".timeline").dataset.windowStart > 0 && document.querySelector("[data-window]").textContent.includes("starts at rv")`)
	if !browsertest.Eval[bool](t, ctx, `document.querySelector(".timeline [data-push]").disabled`) {
		t.Fatal("push offered before watcher B is paused")
	}
	// While the countdown runs, the server would refuse a push: the
	// button must be off whenever the countdown shows.
	browsertest.Eval[bool](t, ctx, `(tl => { const push = tl.querySelector("[data-push]"), left = tl.querySelector("[data-b-countdown]"); window.pushOfferedEarly = 0; new MutationObserver(() => { if (left.textContent && !push.disabled) window.pushOfferedEarly++; }).observe(tl, {subtree: true, childList: true, characterData: true, attributes: true}); return true; })(document.querySelector(".timeline"))`)
	browsertest.Do(t, ctx, "pause lane B", browsertest.Press(`.lane-ctl[data-lane="B"] [data-toggle]`))
	kubectl(t, lab, "-n", "internals-demo", "label", "pod", "ssa-demo", "demo-round=one", "--overwrite")
	browsertest.WaitJS(t, ctx, "the change on A, missed on B", `[...document.querySelectorAll(".event-log li")].some(l => /\[A\]MODIFIED pod\/ssa-demo resourceVersion=\d+/.test(l.textContent)) && document.querySelector(".tl-svg circle.MISSED") !== null`)
	browsertest.WaitJS(t, ctx, "the missed change to be old enough", `document.querySelector("[data-b-status]").textContent.includes("old enough")`)
	if n := browsertest.Eval[int](t, ctx, `window.pushOfferedEarly`); n != 0 {
		t.Errorf("the push was offered %d times while the countdown ran", n)
	}
	browsertest.Do(t, ctx, "push the window past B", browsertest.Press(`.timeline [data-push]`))
	browsertest.WaitJS(t, ctx, "the push", `document.querySelector(".timeline").dataset.pushed > 0`)
	browsertest.ScrollTo(t, ctx, ".timeline")
	browsertest.Shot(t, ctx, "timeline-window-past-b")
	browsertest.Do(t, ctx, "resume lane B", browsertest.Press(`.lane-ctl[data-lane="B"] [data-toggle]`))
	browsertest.WaitJS(t, ctx, "410 and relist", `document.querySelector(".timeline").dataset.gone >= 1 && [...document.querySelectorAll(".event-log li")].some(l => l.textContent.startsWith("[B]RELIST"))`)
	log := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll(".event-log li")].map(l => l.textContent).join("\n")`)
	if !strings.Contains(log, "ERROR 410 Expired: too old resource version:") || !strings.Contains(log, "label PATCHes to pod ssa-demo") {
		t.Fatalf("event log:\n%s", log)
	}
	browsertest.Shot(t, ctx, "timeline-410-relist")

	if !browsertest.Eval[bool](t, ctx, `document.querySelector(".timeline [data-exact]").disabled`) {
		t.Fatal("exact list offered before etcd is compacted")
	}
	browsertest.Do(t, ctx, "compact now", browsertest.Press(`[data-compact]`))
	browsertest.WaitJS(t, ctx, "etcd's horizon", `document.querySelector(".timeline").dataset.compacted > 1 && !document.querySelector(".timeline [data-exact]").disabled`)
	browsertest.Do(t, ctx, "exact list below the compaction", browsertest.Press(`.timeline [data-exact]`))
	browsertest.WaitJS(t, ctx, "etcd's 410", `document.querySelector(".timeline").dataset.exact === "410"`)
	log = browsertest.Eval[string](t, ctx, `[...document.querySelectorAll(".event-log li")].map(l => l.textContent).join("\n")`)
	if !strings.Contains(log, "The resourceVersion for the provided list is too old.") || !strings.Contains(log, "COMPACT etcd at rv") {
		t.Fatalf("event log:\n%s", log)
	}
	browsertest.Shot(t, ctx, "timeline-etcd-compacted")
	// B starts again as client-go 1.35+ does: a streaming list.
	browsertest.Do(t, ctx, "B starts with a streaming list", browsertest.Fill(`.lane-ctl[data-lane="B"] [data-mode]`, "stream"))
	browsertest.Eval[bool](t, ctx, `(document.querySelector('.lane-ctl[data-lane="B"] [data-mode]').dispatchEvent(new Event("change")), true)`)
	browsertest.WaitJS(t, ctx, "the streamed list", `[...document.querySelectorAll(".event-log li")].some(l => l.textContent.startsWith("[B]STREAMED LIST") && l.textContent.includes("initial-events-end"))`)
	browsertest.Shot(t, ctx, "timeline-streaming-list")
}

// flowTextFits checks that every line of the flowchart's boxes fits in
// its box, as the browser draws it: in Thai, the storage box's lines ran
// over its edges.
func flowTextFits(t *testing.T, ctx context.Context) {
	t.Helper()
	over := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll(".flow-node")].flatMap(g => {
		const box = g.querySelector("rect").width.baseVal.value - 8;
		return [...g.querySelectorAll("tspan")].filter(l => l.getComputedTextLength() > box)
			.map(l => g.dataset.stage + ": " + l.textContent + " (" + Math.round(l.getComputedTextLength()) + " of " + box + ")");
	}).join("; ")`)
	if over != "" {
		t.Errorf("flowchart lines wider than their box: %s", over)
	}
}
