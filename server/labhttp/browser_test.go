package labhttp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/client-go/tools/clientcmd"

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

// waitJS waits until a JavaScript expression is true, asking again when
// the poll began as the page was being replaced.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	var err error
	for range 5 {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
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

// shot keeps a screenshot of the viewport under testdata/screenshots.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), b, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

// localKubectl runs the real kubectl as the local user's terminal does: no
// credentials, so it is the same anonymous local user as the page.
func localKubectl(t *testing.T, lab *kubelabtest.Lab, args ...string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfg, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	if _, stderr, err := clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", cfg, "-s", lab.URL()}, args...)...); err != nil {
		t.Fatalf("kubectl %v: %v %s", args, err, stderr)
	}
}

// A lab page in Thai and in English: start the lab, do a step with
// kubectl, and see the page check it off by itself.
func TestLabPageInTheBrowser(t *testing.T) {
	ctx := browser(t)
	lab := kubelabtest.Start(t)

	do(t, ctx, "open the labs in Thai", chromedp.Navigate(lab.URL()+"/lang?to=th"), chromedp.Navigate(lab.URL()+"/labs"))
	waitJS(t, ctx, "the Thai list", `document.documentElement.lang === "th" && document.querySelectorAll(".lab-card").length === 7`)
	shot(t, ctx, "labs-th")

	do(t, ctx, "open the bookmarks lab", chromedp.Navigate(lab.URL()+"/labs/bookmarks"))
	waitJS(t, ctx, "the start button", `document.querySelector(".lab-start button") !== null`)
	do(t, ctx, "start it", chromedp.Click(chromedp.CSS(".lab-start button")))
	waitJS(t, ctx, "the first step current, live", `document.querySelector('li[data-step="list-rv"]')?.dataset.state === "current" && document.querySelector(".lab-meta .conn.live") !== null`)
	localKubectl(t, lab, "-n", "internals-demo", "get", "pods", "-o", "json")
	waitJS(t, ctx, "the step checked off", `document.querySelector('li[data-step="list-rv"]').dataset.state === "passed" && document.querySelector('li[data-step="bookmark"]').dataset.state === "current"`)
	evidence := eval[string](t, ctx, `document.querySelector('li[data-step="list-rv"] [data-evidence]').textContent`)
	if !strings.Contains(evidence, "list pods in internals-demo") {
		t.Errorf("evidence %q", evidence)
	}
	if got := eval[string](t, ctx, `document.querySelector("[data-count]").textContent`); !strings.Contains(got, "1") {
		t.Errorf("count %q", got)
	}
	shot(t, ctx, "lab-th-step-passed")

	do(t, ctx, "switch to English", chromedp.Click(chromedp.CSS(`.langs a[hreflang="en"]`)))
	waitJS(t, ctx, "the English lab page", `document.documentElement.lang === "en" && document.querySelector('li[data-step="list-rv"]')?.dataset.state === "passed"`)
	// The hint opens from the keyboard.
	do(t, ctx, "open the hint", chromedp.Focus(chromedp.CSS(`li[data-step="bookmark"] summary`)), chromedp.KeyEvent("\r"))
	waitJS(t, ctx, "the hint open", `document.querySelector('li[data-step="bookmark"] details').open`)
	shot(t, ctx, "lab-en-step-passed")

	// A question step, answered in the page.
	do(t, ctx, "open the discovery of etcd lab", chromedp.Navigate(lab.URL()+"/labs/etcd"))
	do(t, ctx, "start it", chromedp.Click(chromedp.CSS(".lab-start button")))
	waitJS(t, ctx, "the etcd lab started", `document.querySelector('li[data-step="read-key"]')?.dataset.state === "current"`)
	eval[bool](t, ctx, `(fetch("/ui/etcd/value?key=/registry/pods/internals-demo/ssa-demo"), true)`)
	waitJS(t, ctx, "the inspector step checked", `document.querySelector('li[data-step="prefix"]').dataset.state === "current" && !document.querySelector('li[data-step="prefix"] form').hidden`)
	do(t, ctx, "answer", chromedp.SendKeys(chromedp.CSS(`li[data-step="prefix"] input[name=answer]`), `k8s\x00`), chromedp.Submit(chromedp.CSS(`li[data-step="prefix"] form`)))
	waitJS(t, ctx, "the answer graded", `document.querySelector('li[data-step="prefix"]')?.dataset.state === "passed" && document.querySelector('li[data-step="prefix"] .notice.ok') !== null`)
	shot(t, ctx, "lab-en-question")

	do(t, ctx, "the lesson links to the lab", chromedp.Navigate(lab.URL()+"/lesson/resource-version#bookmarks"))
	waitJS(t, ctx, "the lab link", `document.querySelector('#bookmarks + .lab-link a[href="/labs/bookmarks"]') !== null`)
	eval[bool](t, ctx, `(document.querySelector("#bookmarks").scrollIntoView({block: "start"}), window.scrollBy(0, -90), true)`)
	shot(t, ctx, "lesson-lab-link")

	// The dashboard, for the local admin kubeconfig's user only: the
	// local anonymous user is not an instructor.
	do(t, ctx, "open the dashboard", chromedp.Navigate(lab.URL()+"/labs/dashboard"))
	waitJS(t, ctx, "the sign-in form", `document.querySelector('input[name=token]') !== null`)
	shot(t, ctx, "dashboard-signin")
	cfg, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, a := range cfg.AuthInfos {
		token = a.Token
	}
	do(t, ctx, "sign in with the admin's token", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), token), chromedp.Submit(chromedp.CSS(`input[name=token]`)))
	waitJS(t, ctx, "the class, live", `document.querySelector('tr[data-user="system:anonymous"]') !== null && document.querySelector(".dashboard .conn.live") !== null`)
	row := eval[string](t, ctx, `document.querySelector('tr[data-user="system:anonymous"]').textContent`)
	if !strings.Contains(row, "etcd") || !strings.Contains(row, "3/3") {
		t.Errorf("dashboard row %q", row)
	}
	do(t, ctx, "dark mode", chromedp.Click(chromedp.CSS(`[data-theme-toggle]`)))
	shot(t, ctx, "dashboard-dark")
}
