package browsertest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// PageErrors starts collecting what the pages of this browser throw and
// log as errors to the console, from now on, and returns what has been
// collected so far each time it is called. A test that calls it fails
// closed: a page that never loads logs nothing, so it is read after the
// steps that must have run.
func PageErrors(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var (
		mu   sync.Mutex
		errs []string
	)
	add := func(s string) {
		mu.Lock()
		errs = append(errs, s)
		mu.Unlock()
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			add(msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			var parts []string
			for _, a := range e.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, string(a.Value))
				}
			}
			add("console.error: " + strings.Join(parts, " "))
		}
	})
	if err != nil {
		t.Fatalf("listen for the page's errors: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}
