package compose_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/clitest"
)

// TestBrowserViewsGoOn is a student's Chromium on the lesson's watch
// timeline (a live view over a websocket), through the published ports,
// while the class loses an etcd member and then kubelab's process: with
// etcd-1 stopped a change to the student's pod still reaches the view; with
// kubelab killed and restarted by Compose the view says it is
// reconnecting, is live again by itself without a reload, and shows the
// next change. Chromium ignores certificate errors, as a student's does
// once the warning is passed.
func TestBrowserViewsGoOn(t *testing.T) {
	t.Parallel()
	p := newProject(t, "browser")
	p.up(t)
	admin := p.adminKubeconfig(t)
	ctx := browsertest.Start(t)
	if _, err := chromedp.Call(ctx, security.SetIgnoreCertificateErrors, security.SetIgnoreCertificateErrorsParams{Ignore: true}); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "open the lesson over plain HTTP", chromedp.Navigate(p.httpURL()+"/lesson/gone"))
	browsertest.WaitJS(t, ctx, "the HTTPS sign-in page", `location.protocol === "https:" && location.pathname === "/signin" && document.querySelector("form[action='/signin']") !== null`)
	browsertest.Submit(t, ctx, "join", "/lesson/gone",
		browsertest.Fill(`#name`, "Chromium Student"),
		browsertest.Fill(`#code`, p.joinCode),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, ctx, "the timeline live, both lanes listed", `document.querySelector(".timeline [data-conn].live") !== null && [...document.querySelectorAll(".event-log li")].filter(l => l.textContent.includes("LIST")).length >= 2`)
	ns := browsertest.Eval[string](t, ctx, `document.querySelector(".timeline").dataset.ns`)
	modified := `[...document.querySelectorAll(".event-log li")].filter(l => /\[A\]MODIFIED pod\/ssa-demo resourceVersion=\d+/.test(l.textContent)).length`

	p.compose(t, "stop", "etcd-1")
	clitest.KubectlWithOK(t, admin, "-n", ns, "label", "pod", "ssa-demo", "round=one")
	browsertest.WaitJS(t, ctx, "the change on the timeline with etcd-1 stopped", modified+` >= 1`)
	p.upAgain(t)

	// A mark that a reload would lose, and a record of the badge going
	// down, whenever it does.
	browsertest.Eval[bool](t, ctx, `(() => {
		window.sameDocument = true;
		window.sawDown = false;
		new MutationObserver(() => { if (document.querySelector(".timeline [data-conn].down")) window.sawDown = true; })
			.observe(document.body, {subtree: true, attributes: true, childList: true});
		return true;
	})()`)
	before := browsertest.Eval[int](t, ctx, modified)
	pid, err := strconv.Atoi(strings.TrimSpace(docker(t, "inspect", "-f", "{{.State.Pid}}", p.container("kubelab"))))
	if err != nil || pid <= 0 {
		t.Fatalf("kubelab's process: %d %v", pid, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	browsertest.WaitJS(t, ctx, "the timeline reconnecting, then live again without a reload",
		`window.sameDocument === true && window.sawDown === true && document.querySelector(".timeline [data-conn].live") !== null`)
	clitest.KubectlWithOK(t, admin, "-n", ns, "label", "pod", "ssa-demo", "round=two", "--overwrite")
	browsertest.WaitJS(t, ctx, "the next change on the timeline", modified+` > `+strconv.Itoa(before))
	browsertest.ScrollTo(t, ctx, ".timeline")
	browsertest.Shot(t, ctx, "compose-timeline-reconnected")
}
