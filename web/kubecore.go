package web

import (
	"context"

	"github.com/kubelab/kubelab/web/i18n"
)

// The live views on the kube core (--apiserver=kube), which kube-apiserver's
// own code serves. kubelab moves onto it one view at a time; a page shows
// the others as not there yet, in place, rather than as a view that never
// connects.

// KubeCoreViews are the live views that run on the kube core: the tracer
// reads kube's own hooks, and poll versus watch is plain HTTP. The
// timeline and the inspector are built on kubelab's own registry and
// watch cache.
var KubeCoreViews = map[string]bool{"flowchart": true, "tracer": true, "pollwatch": true}

type kubeCoreKey struct{}

// OnKubeCore marks ctx as rendering a page served on the kube core.
func OnKubeCore(ctx context.Context) context.Context {
	return context.WithValue(ctx, kubeCoreKey{}, true)
}

// onKubeCore reports whether the page is served on the kube core.
func onKubeCore(ctx context.Context) bool {
	on, _ := ctx.Value(kubeCoreKey{}).(bool)
	return on
}

// runsHere reports whether the live view named runs where the page is served.
func runsHere(ctx context.Context, view string) bool {
	return !onKubeCore(ctx) || KubeCoreViews[view]
}

// viewTitle is a live view's title, as its own header gives it.
func viewTitle(lang i18n.Lang, view string) string {
	key := map[string]string{"tracer": "tracer.title", "timeline": "tl.title", "inspector": "insp.title", "pollwatch": "pw.title"}[view]
	return T(lang, key)
}
