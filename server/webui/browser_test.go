package webui_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// browser starts headless Chromium (Debian's chromium, or KUBELAB_CHROMIUM)
// with a fresh profile. Without one the test skips, except in CI
// (CI=true), where it fails.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("KUBELAB_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium: install it (apt-get install -y chromium) or set KUBELAB_CHROMIUM")
		}
		t.Skip("no chromium; the browser tests need it (they fail instead of skipping when CI=true)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until a JavaScript expression is true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	var err error
	for range 5 {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
		// A poll that began as the page navigated away is asked again.
		if err == nil || !navigating(err) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		shot(t, ctx, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// navigating: the error of a call made while the page was being replaced
// by the next one (after a click on a link or a form).
func navigating(err error) bool {
	for _, s := range []string{"Cannot find context", "navigated or closed", "Not attached to an active page"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// scrollTo brings the element to the top of the viewport, by script: the
// page may have navigated since chromedp last looked at its DOM.
func scrollTo(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	eval[bool](t, ctx, `(document.querySelector(`+strconv.Quote(selector)+`).scrollIntoView({block: "start"}), window.scrollBy(0, -70), true)`)
}

// shot keeps a screenshot of the viewport under testdata/screenshots.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join("testdata", "screenshots", name+".png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

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
	urls := eval[[]string](t, ctx, `performance.getEntries().map(e => e.name).filter(n => /^[a-z]+:/.test(n))`)
	for _, s := range urls {
		if p, err := url.Parse(s); err != nil || p.Host != u.Host {
			t.Errorf("the page fetched %s from another host", s)
		}
	}
}

func TestBrowser(t *testing.T) {
	ctx := browser(t)
	lab := kubelabtest.Start(t)

	t.Run("OK lesson, Run it live and the tracer", func(t *testing.T) {
		do(t, ctx, "open the lesson", chromedp.Navigate(lab.URL()+"/lesson/request-path"))
		waitJS(t, ctx, "the tracer to connect", `document.querySelector(".tracer .conn.live") !== null`)
		onlyThisHost(t, ctx, lab)
		do(t, ctx, "run it live", chromedp.Click(chromedp.CSS(`figure[data-cmd="list-table"] [data-run]`)))
		waitJS(t, ctx, "the live response", `document.querySelector('figure[data-cmd="list-table"]').dataset.state === "done"`)
		resp := eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-resp').textContent`)
		req := eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-req').textContent`)
		if !strings.Contains(req, "GET /api/v1/namespaces/internals-demo/pods?limit=500 HTTP/1.1") || !strings.Contains(resp, "HTTP/1.1 200 OK") || !strings.Contains(resp, "ssa-demo") {
			t.Fatalf("request %q\nresponse %q", req, resp)
		}
		scrollTo(t, ctx, `figure[data-cmd="list-table"]`)
		shot(t, ctx, "run-it-live")
		waitJS(t, ctx, "the request in the tracer", `document.querySelector('.trace[data-verb="list"]') !== null`)
		// The student's own kubectl shows up too, and lights the flowchart to etcd.
		kubectl(t, lab, "-n", "internals-demo", "label", "pod", "web-86d8686cfb-84dk9", "traced=yes")
		waitJS(t, ctx, "kubectl's patch in the tracer", `document.querySelector('.trace[data-verb="patch"]') !== null`)
		waitJS(t, ctx, "the flowchart to light up", `document.querySelector('.flow-node[data-stage="storage"].allow') !== null && document.querySelector('.flow-node[data-stage="watch"].allow') !== null`)
		scrollTo(t, ctx, ".flow")
		shot(t, ctx, "lesson-en-tracer")
		// A request RBAC or admission stops shows where and why.
		if out := kubectlFails(t, lab, "-n", "no-such-namespace", "create", "configmap", "c", "--from-literal=a=b"); !strings.Contains(out, "not found") {
			t.Fatalf("kubectl said %q", out)
		}
		waitJS(t, ctx, "the denied request", `document.querySelector('.trace.failed .trace-why') !== null`)
		scrollTo(t, ctx, ".tracer")
		shot(t, ctx, "tracer-denied")
	})

	t.Run("OK watch timeline, compaction, 410 and relist", func(t *testing.T) {
		do(t, ctx, "open the 410 page", chromedp.Navigate(lab.URL()+"/lesson/gone"))
		waitJS(t, ctx, "both lanes to list", `[...document.querySelectorAll(".event-log li")].filter(l => l.textContent.includes("LIST")).length >= 2`)
		do(t, ctx, "pause lane B", chromedp.Click(chromedp.CSS(`.lane-ctl[data-lane="B"] [data-toggle]`)))
		kubectl(t, lab, "-n", "internals-demo", "label", "pod", "ssa-demo", "demo-round=one", "--overwrite")
		waitJS(t, ctx, "MODIFIED on the timeline", `[...document.querySelectorAll(".event-log li")].some(l => /\[A\]MODIFIED Pod rv=\d+ name=ssa-demo/.test(l.textContent)) && document.querySelector(".tl-svg circle.MODIFIED") !== null`)
		// A second change from the page: compacting now drops the first one,
		// which B, paused before it, still needs.
		do(t, ctx, "change the pod", chromedp.Click(chromedp.CSS(`.timeline [data-change]`)))
		waitJS(t, ctx, "the second MODIFIED", `[...document.querySelectorAll(".event-log li")].filter(l => /\[A\]MODIFIED Pod rv=\d+ name=ssa-demo/.test(l.textContent)).length >= 2`)
		do(t, ctx, "compact now", chromedp.Click(chromedp.CSS(`[data-compact]`)))
		waitJS(t, ctx, "the compaction", `document.querySelector(".timeline").dataset.compacted > 0`)
		do(t, ctx, "resume lane B", chromedp.Click(chromedp.CSS(`.lane-ctl[data-lane="B"] [data-toggle]`)))
		waitJS(t, ctx, "410 and relist", `document.querySelector(".timeline").dataset.gone >= 1 && [...document.querySelectorAll(".event-log li")].some(l => l.textContent.startsWith("[B]RELIST"))`)
		log := eval[string](t, ctx, `[...document.querySelectorAll(".event-log li")].map(l => l.textContent).join("\n")`)
		if !strings.Contains(log, "ERROR 410 Expired: too old resource version:") {
			t.Fatalf("event log:\n%s", log)
		}
		scrollTo(t, ctx, ".timeline")
		shot(t, ctx, "timeline-410-relist")
	})

	t.Run("OK Thai, remembered", func(t *testing.T) {
		do(t, ctx, "open the lesson", chromedp.Navigate(lab.URL()+"/lesson/request-path"))
		do(t, ctx, "switch to Thai", chromedp.Click(chromedp.CSS(`.langs a[lang="th"]`)))
		waitJS(t, ctx, "the Thai page", `document.documentElement.lang === "th" && document.body.textContent.includes("เส้นทาง request จริง")`)
		scrollTo(t, ctx, ".flow")
		shot(t, ctx, "lesson-th-flowchart")
		do(t, ctx, "open another page", chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
		waitJS(t, ctx, "Thai again", `document.documentElement.lang === "th"`)
		shot(t, ctx, "lesson-th")
		do(t, ctx, "dark theme", chromedp.Click(chromedp.CSS(`[data-theme-toggle]`)))
		waitJS(t, ctx, "dark", `document.documentElement.dataset.theme === "dark"`)
		do(t, ctx, "reload", chromedp.Reload())
		waitJS(t, ctx, "dark remembered", `document.documentElement.dataset.theme === "dark"`)
		shot(t, ctx, "lesson-th-dark")
		do(t, ctx, "light theme", chromedp.Click(chromedp.CSS(`[data-theme-toggle]`)))
		do(t, ctx, "back to English", chromedp.Navigate(lab.URL()+"/lang?to=en"))
	})

	t.Run("OK XSS through a label and an annotation is inert", func(t *testing.T) {
		do(t, ctx, "open the watch page", chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
		evil := `<img src=x onerror="document.title='pwned'">`
		do(t, ctx, "type a label value", chromedp.SetValue(chromedp.CSS(`figure[data-cmd="label-pod"] input`), evil))
		do(t, ctx, "run it", chromedp.Click(chromedp.CSS(`figure[data-cmd="label-pod"] [data-run]`)))
		waitJS(t, ctx, "the 422", `document.querySelector('figure[data-cmd="label-pod"]').dataset.code === "422" && document.querySelector('figure[data-cmd="label-pod"]').dataset.state === "done"`)
		text := eval[string](t, ctx, `document.querySelector('figure[data-cmd="label-pod"] .live-resp').textContent`)
		if !strings.Contains(text, `<img src=x onerror=`) {
			t.Fatalf("the API's message is not shown as text: %q", text)
		}
		// An annotation can hold anything; the inspector shows it as text.
		kubectl(t, lab, "-n", "internals-demo", "annotate", "pod", "ssa-demo", "note="+evil)
		do(t, ctx, "open the etcd page", chromedp.Navigate(lab.URL()+"/lesson/etcd"))
		waitJS(t, ctx, "the key list", `document.querySelector('[data-key="/registry/pods/internals-demo/ssa-demo"]') !== null`)
		do(t, ctx, "pick ssa-demo", chromedp.Click(chromedp.CSS(`[data-key="/registry/pods/internals-demo/ssa-demo"]`)))
		waitJS(t, ctx, "the decoded value", `document.querySelector("[data-json]").textContent.includes("onerror") && document.querySelector(".hex-b.prefix") !== null`)
		if n := eval[int](t, ctx, `document.querySelectorAll("main img").length`); n != 0 {
			t.Fatalf("%d img elements were injected", n)
		}
		if title := eval[string](t, ctx, `document.title`); strings.Contains(title, "pwned") {
			t.Fatal("the injected handler ran")
		}
		fields := eval[string](t, ctx, `document.querySelector("[data-fields]").textContent`)
		for _, want := range []string{"raw", "metadata", "managedFields", "f:containers", "manager-a"} {
			if !strings.Contains(fields, want) {
				t.Errorf("decoded fields lack %q", want)
			}
		}
		scrollTo(t, ctx, ".inspector")
		shot(t, ctx, "etcd-inspector")
	})

	t.Run("OK poll vs watch", func(t *testing.T) {
		do(t, ctx, "open the lab", chromedp.Navigate(lab.URL()+"/lab"))
		do(t, ctx, "start the race", chromedp.Click(chromedp.CSS(`.pollwatch [data-start]`)))
		waitJS(t, ctx, "the race to be ready", `!document.querySelector(".pollwatch [data-change]").disabled && +document.querySelector('.pollwatch [data-side="poll"] [data-requests]').textContent > 1`)
		do(t, ctx, "change the pod", chromedp.Click(chromedp.CSS(`.pollwatch [data-change]`)))
		waitJS(t, ctx, "both to notice", `document.querySelector(".pollwatch").dataset.done === "1"`)
		if n := eval[string](t, ctx, `document.querySelector('.pollwatch [data-side="watch"] [data-requests]').textContent`); n != "1" {
			t.Errorf("the watch made %s requests", n)
		}
		scrollTo(t, ctx, ".pollwatch")
		shot(t, ctx, "lab-poll-vs-watch")
	})

	t.Run("OK quiz in the site's layout", func(t *testing.T) {
		do(t, ctx, "open the quiz", chromedp.Navigate(lab.URL()+"/quiz"))
		waitJS(t, ctx, "the quiz page", `document.querySelector('.mainnav a[href="/quiz"][aria-current="page"]') !== null`)
		shot(t, ctx, "quiz")
	})

	t.Run("OK phone", func(t *testing.T) {
		do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(lab.URL()+"/lesson/resource-version"))
		waitJS(t, ctx, "the page", `document.querySelector(".timeline .conn.live") !== null`)
		if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the page is %dpx wide on a 390px phone", w)
		}
		shot(t, ctx, "phone")
	})
}
