package labhttp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

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
	t.Parallel()
	ctx := browsertest.Start(t)
	lab := kubelabtest.Start(t)

	browsertest.Do(t, ctx, "open the labs in Thai", chromedp.Navigate(lab.URL()+"/lang?to=th"), chromedp.Navigate(lab.URL()+"/labs"))
	browsertest.WaitJS(t, ctx, "the Thai list", `document.documentElement.lang === "th" && document.querySelectorAll(".lab-card").length === 7`)
	browsertest.Shot(t, ctx, "labs-th")

	browsertest.Do(t, ctx, "open the bookmarks lab", chromedp.Navigate(lab.URL()+"/labs/bookmarks"))
	browsertest.WaitJS(t, ctx, "the start button", `document.querySelector(".lab-start button") !== null`)
	browsertest.Submit(t, ctx, "start it", "/labs/bookmarks", browsertest.Press(".lab-start button"))
	browsertest.WaitJS(t, ctx, "the first step current, live", `document.querySelector('li[data-step="list-rv"]')?.dataset.state === "current" && document.querySelector(".lab-meta .conn.live") !== null`)
	localKubectl(t, lab, "-n", "internals-demo", "get", "pods", "-o", "json")
	browsertest.WaitJS(t, ctx, "the step checked off", `document.querySelector('li[data-step="list-rv"]').dataset.state === "passed" && document.querySelector('li[data-step="bookmark"]').dataset.state === "current"`)
	evidence := browsertest.Eval[string](t, ctx, `document.querySelector('li[data-step="list-rv"] [data-evidence]').textContent`)
	if !strings.Contains(evidence, "list pods ใน internals-demo") { // the evidence in the page's language
		t.Errorf("evidence %q", evidence)
	}
	if got := browsertest.Eval[string](t, ctx, `document.querySelector("[data-count]").textContent`); !strings.Contains(got, "1") {
		t.Errorf("count %q", got)
	}
	browsertest.Shot(t, ctx, "lab-th-step-passed")

	browsertest.Do(t, ctx, "switch to English", browsertest.Press(`.langs a[hreflang="en"]`))
	browsertest.WaitJS(t, ctx, "the English lab page", `document.documentElement.lang === "en" && document.querySelector('li[data-step="list-rv"]')?.dataset.state === "passed"`)
	// The hint opens from the keyboard.
	// Focused by script: chromedp's view of the DOM may still be the page
	// before the language switch.
	browsertest.Eval[bool](t, ctx, `(document.querySelector('li[data-step="bookmark"] summary').focus(), document.activeElement.tagName === "SUMMARY")`)
	browsertest.Do(t, ctx, "open the hint", chromedp.KeyEvent("\r"))
	browsertest.WaitJS(t, ctx, "the hint open", `document.querySelector('li[data-step="bookmark"] details').open`)
	browsertest.Shot(t, ctx, "lab-en-step-passed")

	// A question step, answered in the page.
	browsertest.Do(t, ctx, "open the discovery of etcd lab", chromedp.Navigate(lab.URL()+"/labs/etcd"))
	browsertest.Submit(t, ctx, "start it", "/labs/etcd", browsertest.Press(".lab-start button"))
	// The page the form was posted from updates live too: wait for the
	// page the start led to (no start button, its own live connection), or
	// the fetch below may leave from a page being unloaded and be lost.
	browsertest.WaitJS(t, ctx, "the etcd lab started", `document.querySelector(".lab-start button") === null && document.querySelector('li[data-step="read-key"]')?.dataset.state === "current" && document.querySelector(".lab-meta .conn.live") !== null`)
	// The inspector's step cannot be done from the terminal: it says so,
	// and links to the inspector.
	if href := browsertest.Eval[string](t, ctx, `document.querySelector('li[data-step="read-key"] .step-open a')?.getAttribute("href") || ""`); href != "/lesson/etcd?lang=en#insp-h" {
		t.Errorf("the inspector's link: %q", href)
	}
	browsertest.Eval[bool](t, ctx, `(fetch("/ui/etcd/value?key=/registry/pods/internals-demo/ssa-demo"), true)`)
	browsertest.WaitJS(t, ctx, "the inspector step checked", `document.querySelector('li[data-step="prefix"]').dataset.state === "current" && !document.querySelector('li[data-step="prefix"] form').hidden`)
	browsertest.Do(t, ctx, "answer", chromedp.SendKeys(chromedp.CSS(`li[data-step="prefix"] input[name=answer]`), `k8s\x00`), chromedp.Submit(chromedp.CSS(`li[data-step="prefix"] form`)))
	browsertest.WaitJS(t, ctx, "the answer graded", `document.querySelector('li[data-step="prefix"]')?.dataset.state === "passed" && document.querySelector('li[data-step="prefix"] .notice.ok') !== null`)
	browsertest.Shot(t, ctx, "lab-en-question")

	browsertest.Do(t, ctx, "the inspector's link", chromedp.Navigate(lab.URL()+"/lesson/etcd?lang=en#insp-h"))
	browsertest.WaitJS(t, ctx, "the inspector", `document.getElementById("insp-h")?.closest("[data-live=inspector]") !== null`)
	browsertest.Do(t, ctx, "the lesson links to the lab", chromedp.Navigate(lab.URL()+"/lesson/resource-version#bookmarks"))
	browsertest.WaitJS(t, ctx, "the lab link", `document.querySelector('#bookmarks + .lab-link a[href="/labs/bookmarks"]') !== null`)
	browsertest.Eval[bool](t, ctx, `(document.querySelector("#bookmarks").scrollIntoView({block: "start"}), window.scrollBy(0, -90), true)`)
	browsertest.Shot(t, ctx, "lesson-lab-link")

	// The dashboard, for the local admin kubeconfig's user only: the
	// local anonymous user is not an instructor.
	browsertest.Do(t, ctx, "open the dashboard", chromedp.Navigate(lab.URL()+"/labs/dashboard"))
	browsertest.WaitJS(t, ctx, "the sign-in form", `document.querySelector('input[name=token]') !== null`)
	// The instructor's pages are in the labs' section but have no
	// student's terminal.
	if browsertest.Eval[bool](t, ctx, `document.querySelector("[data-terminal-dock]") !== null || document.querySelector('nav a[href="/labs"][aria-current]') === null`) {
		t.Error("the instructor's sign-in has a terminal, or the labs are not the current section")
	}
	browsertest.Shot(t, ctx, "dashboard-signin")
	cfg, err := clientcmd.LoadFromFile(lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, a := range cfg.AuthInfos {
		token = a.Token
	}
	browsertest.Do(t, ctx, "sign in with the admin's token", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), token), chromedp.Submit(chromedp.CSS(`input[name=token]`)))
	browsertest.WaitJS(t, ctx, "the class, live", `document.querySelector('tr[data-user="system:anonymous"]') !== null && document.querySelector(".dashboard .conn.live") !== null`)
	row := browsertest.Eval[string](t, ctx, `document.querySelector('tr[data-user="system:anonymous"]').textContent`)
	if !strings.Contains(row, "etcd") || !strings.Contains(row, "3/4") {
		t.Errorf("dashboard row %q", row)
	}
	browsertest.Do(t, ctx, "dark mode", browsertest.Press(`[data-theme-toggle]`))
	browsertest.Shot(t, ctx, "dashboard-dark")
}
