package browsertest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core, vendored from npm by axe/rebuild.sh (MPL-2.0,
// axe/LICENSE). Only the tests inject it; kubelab serves none of it.
//
//go:embed axe/axe.min.js
var axeSource string

// AxeViolation is one rule axe-core found broken on a page, with the
// elements that break it.
type AxeViolation struct {
	ID          string `json:"id"`
	Impact      string `json:"impact"`
	Description string `json:"description"`
	HelpURL     string `json:"helpUrl"`
	Nodes       []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

func (v AxeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Description)
	for i, n := range v.Nodes {
		if i == 3 {
			fmt.Fprintf(&b, "\n    ... and %d more", len(v.Nodes)-3)
			break
		}
		fmt.Fprintf(&b, "\n    %v: %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return b.String()
}

// ColourRules are axe-core's rules that read the page's colours: all that
// can find something new when only the theme changes.
var ColourRules = []string{"color-contrast", "link-in-text-block"}

// Axe runs axe-core's WCAG 2.0 and 2.1 A and AA rules and 2.2's AA ones
// (touch targets of at least 24 px), or only the rules named, on the page
// as it is now and returns the serious and critical violations.
func Axe(t *testing.T, ctx context.Context, rules ...string) []AxeViolation {
	t.Helper()
	if !Eval[bool](t, ctx, `typeof window.axe === "object"`) {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](axeSource+"\n;true")); err != nil {
			t.Fatalf("injecting axe-core: %v", err)
		}
	}
	only := `{type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}`
	if len(rules) > 0 {
		b, _ := json.Marshal(rules)
		only = `{type: "rule", values: ` + string(b) + `}`
	}
	all, err := chromedp.Run(ctx, chromedp.Evaluate[[]AxeViolation](
		`axe.run(document, {runOnly: `+only+`, resultTypes: ["violations"]}).then(r => r.violations)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("running axe-core: %v", err)
	}
	var bad []AxeViolation
	for _, v := range all {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, v)
		}
	}
	return bad
}
