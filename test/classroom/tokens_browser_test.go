package classroom_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
)

// The class in a real browser over the HTTPS listener: a student who typed
// the plain-HTTP address lands on the HTTPS sign-in, joins, runs a live
// command and a lab (websockets over wss), opens the quiz; a hostile page
// on another site that sends the browser to the kubeconfig mints nothing;
// the instructor's dashboard streams live. Chromium ignores certificate
// errors here, as a student's does once the warning is passed.
func TestTransportTheClassWorksOverHTTPSInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	c := startTokensClass(t, instructorTokenA)
	if _, err := chromedp.Call(ctx, security.SetIgnoreCertificateErrors, security.SetIgnoreCertificateErrorsParams{Ignore: true}); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(c.httpsURL+"/lesson/request-path"))
	browsertest.WaitJS(t, ctx, "the HTTPS sign-in page", `location.protocol === "https:" && location.pathname === "/signin" && document.querySelector("form[action='/signin']") !== null`)
	browsertest.Submit(t, ctx, "join", "/lesson/request-path",
		browsertest.Fill(`#name`, "Erin"),
		browsertest.Fill(`#code`, joinCode),
		browsertest.Press(`form[action="/signin"] button`))
	browsertest.WaitJS(t, ctx, "back on the lesson, signed in", `location.protocol === "https:" && location.pathname === "/lesson/request-path" && document.querySelector("[data-account]")?.hidden === false`)
	if cookies := browsertest.Eval[string](t, ctx, `document.cookie`); strings.Contains(cookies, "kubelab_session") {
		t.Fatalf("the session cookie is readable by scripts: %q", cookies)
	}
	browsertest.Do(t, ctx, "run it live", browsertest.Press(`figure[data-cmd="list-table"] [data-run]`))
	browsertest.WaitJS(t, ctx, "the live response over wss", `document.querySelector('figure[data-cmd="list-table"]').dataset.state === "done"`)

	browsertest.Do(t, ctx, "open a lab", chromedp.Navigate(c.httpsURL+"/labs/watch"))
	browsertest.WaitJS(t, ctx, "the lab's websocket over wss", `document.querySelector("[data-conn].live") !== null`)
	browsertest.Do(t, ctx, "open the quiz", chromedp.Navigate(c.httpsURL+"/quiz"))
	browsertest.WaitJS(t, ctx, "the quiz page", `location.pathname.startsWith("/quiz") && document.querySelector("main a, main form") !== null`)

	// A hostile page on another site sends the signed-in browser to the
	// kubeconfig (a top-level GET carries a SameSite=Lax cookie) and loads
	// it as an image.
	before := tokenKeys(t, c)
	kubeconfig := c.httpsURL + "/kubelab/v1/kubeconfig"
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><img src=%q><script>setTimeout(() => { location = %q }, 300)</script>`, kubeconfig, kubeconfig)
	}))
	defer hostile.Close()
	browsertest.Do(t, ctx, "open a hostile page", chromedp.Navigate(hostile.URL))
	browsertest.WaitJS(t, ctx, "the hostile page's navigation refused", `location.pathname === "/kubelab/v1/kubeconfig" && document.body.textContent.includes("MethodNotAllowed")`)
	if after := tokenKeys(t, c); after != before {
		t.Fatalf("a hostile page minted %d tokens", after-before)
	}

	browsertest.Do(t, ctx, "open the dashboard", chromedp.Navigate(c.httpsURL+"/labs/dashboard"))
	browsertest.WaitJS(t, ctx, "a student is refused the dashboard", `document.querySelector("input[name=token]") === null`)
	browsertest.Do(t, ctx, "sign out", chromedp.Navigate(c.httpsURL+"/lesson/request-path"))
	browsertest.WaitJS(t, ctx, "the account bar", `document.querySelector("[data-account]")?.hidden === false`)
	browsertest.Submit(t, ctx, "sign out", "/signin", browsertest.Press(`.account form[action="/signout"] button`))
	browsertest.WaitJS(t, ctx, "signed out", `location.pathname === "/signin"`)
	browsertest.SignInToDashboard(t, ctx, c.httpsURL, instructorTokenA)
	browsertest.WaitJS(t, ctx, "the dashboard live over wss", `location.pathname === "/labs/dashboard" && document.querySelector("[data-conn].live") !== null`)
}
