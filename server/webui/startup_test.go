package webui_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// starting holds a place for each server being started, two at most: a
// start is a burst of CPU (the OpenAPI documents) and of fsynced etcd
// writes (the seeded state), and with every parallel test starting at
// once on two cores and a busy disk, an etcd request of a start timed out.
var starting = make(chan struct{}, 2)

// startLab is kubelabtest.Start, with at most two servers starting at a
// time; the tests wait side by side once their servers run.
func startLab(t *testing.T, options ...func(*server.Config)) *kubelabtest.Lab {
	t.Helper()
	starting <- struct{}{}
	defer func() { <-starting }()
	return kubelabtest.Start(t, options...)
}

// startBrowserAndLab starts Chromium while kubelab starts: each takes
// seconds, much of it waiting (etcd's start, the controllers settling,
// Chromium's first tab), so side by side a browser test begins sooner.
func startBrowserAndLab(t *testing.T, options ...func(*server.Config)) (context.Context, *kubelabtest.Lab) {
	t.Helper()
	ctx := browsertest.Start(t)
	launched := make(chan error, 1)
	go func() { launched <- chromedp.Do(ctx) }() // no steps: launch and open the tab
	lab := startLab(t, options...)
	if err := <-launched; err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, lab
}
