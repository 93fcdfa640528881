package webui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/server"
)

// TestBrowserJoinsAClass: in classroom mode a browser is sent to sign in,
// joins with a display name (shown escaped), lands on the lesson with its
// account in the header, and its live commands run in its own namespace.
func TestBrowserJoinsAClass(t *testing.T) {
	// Its own Chromium and its own server in classroom mode; it mostly
	// waits on the browser, so it runs beside the others.
	t.Parallel()
	ctx, lab := startBrowserAndLab(t, func(c *server.Config) {
		c.Classroom = true
		c.SecureListen = "127.0.0.1:0"
		c.JoinCode = "k8s-101"
	})
	browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(lab.URL()+"/lesson/request-path"))
	browsertest.WaitJS(t, ctx, "the sign-in page", `location.pathname === "/signin" && document.querySelector("form[action='/signin']") !== null`)
	browsertest.Submit(t, ctx, "a wrong join code", "/signin",
		browsertest.Fill(`#name`, `Ada <b>Lovelace</b>`),
		browsertest.Fill(`#code`, "guess"),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, ctx, "the join code refused", `document.querySelector("#signin-error") !== null`)
	browsertest.Shot(t, ctx, "signin-refused")
	if v := browsertest.Eval[string](t, ctx, `document.querySelector("#name").value`); v != `Ada <b>Lovelace</b>` {
		t.Fatalf("the name typed was not kept: %q", v)
	}
	browsertest.Submit(t, ctx, "join", "/lesson/request-path",
		browsertest.Fill(`#code`, "k8s-101"),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, ctx, "back on the lesson, signed in", `location.pathname === "/lesson/request-path" && document.querySelector("[data-account]")?.hidden === false`)
	account := browsertest.Eval[string](t, ctx, `document.querySelector("[data-account]").textContent`)
	if !strings.Contains(account, "Ada <b>Lovelace</b>") || !strings.Contains(account, "ada-b-lovelace-b") || browsertest.Eval[int](t, ctx, `document.querySelectorAll("[data-account] b").length`) != 0 {
		t.Fatalf("account %q: the display name must show as text", account)
	}
	// The kubeconfig mints a token: a form POST, never a link a page could GET.
	if form := browsertest.Eval[string](t, ctx, `(f => f.method + " " + f.getAttribute("action"))(document.querySelector("form.account-kubeconfig"))`); form != "post /kubelab/v1/kubeconfig" {
		t.Fatalf("kubeconfig form %q", form)
	}
	browsertest.Shot(t, ctx, "signed-in")

	// Her live command runs against her own namespace, as her.
	browsertest.Do(t, ctx, "run it live", browsertest.Press(`figure[data-cmd="list-table"] [data-run]`))
	browsertest.WaitJS(t, ctx, "the live response", `document.querySelector('figure[data-cmd="list-table"]').dataset.state === "done"`)
	req := browsertest.Eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-req').textContent`)
	resp := browsertest.Eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-resp').textContent`)
	if !strings.Contains(req, "/api/v1/namespaces/ada-b-lovelace-b/pods") || !strings.Contains(resp, "HTTP/1.1 200 OK") || !strings.Contains(resp, "ssa-demo") {
		t.Fatalf("request %q\nresponse %q", req, resp)
	}

	browsertest.Submit(t, ctx, "sign out", "/signin", browsertest.Press(`.account form[action="/signout"] button`))
	browsertest.WaitJS(t, ctx, "signed out", `location.pathname === "/signin"`)
}
