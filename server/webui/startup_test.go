package webui_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// startBrowserAndLab starts Chromium while kubelab starts: each takes
// seconds, much of it waiting (etcd's start, the controllers settling,
// Chromium's first tab), so side by side a browser test begins sooner.
func startBrowserAndLab(t *testing.T, options ...func(*server.Config)) (context.Context, *kubelabtest.Lab) {
	t.Helper()
	ctx := browsertest.Start(t)
	launched := make(chan error, 1)
	go func() { launched <- chromedp.Do(ctx) }() // no steps: launch and open the tab
	lab := kubelabtest.Start(t, options...)
	if err := <-launched; err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, lab
}
