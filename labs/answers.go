package labs

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Answers to the questions only one student can know: what the server
// sent that student's own watches. Another student's number is another
// number.

// bookmarkAnswer is right when it is the resourceVersion of a BOOKMARK
// sent on one of the student's watches of their pods during the lab.
func bookmarkAnswer(_ context.Context, env *Env, answer string) (bool, error) {
	a := bareNumber(answer)
	isPods := podsWatch(env)
	return a != "" && lastWatch(env, env.LabStarted, func(w *Watch) bool { return isPods(w) && slices.Contains(w.BookmarkRVs, a) }) != nil, nil
}

// tooOld is kube-apiserver's message for a watch from before the watch
// cache's window: the resourceVersion asked for, and where it starts.
var tooOld = regexp.MustCompile(`too old resource version: (\d+) \((\d+)\)`)

// windowStartAnswer is right when it is the Y of a "too old resource
// version: X (Y)" sent on one of the student's watches during the lab.
func windowStartAnswer(_ context.Context, env *Env, answer string) (bool, error) {
	a := bareNumber(answer)
	return a != "" && lastWatch(env, env.LabStarted, func(w *Watch) bool {
		m := tooOld.FindStringSubmatch(w.Gone)
		return m != nil && m[2] == a && ownPods(env, w)
	}) != nil, nil
}

// ownPods: w watched the pods of the student's namespace, the resource
// whose watch cache window the 410 lab moves. Another resource's 410
// (configmaps from resourceVersion 1) tells nothing of that window.
func ownPods(env *Env, w *Watch) bool {
	return w.APIGroup == "" && w.Resource == "pods" && w.Namespace == env.Namespace
}

// modRevisionAnswer is right when it is the mod revision etcd holds for
// one of the pods of the student's namespace: read from their own key,
// with etcdctl or the inspector.
func modRevisionAnswer(ctx context.Context, env *Env, answer string) (bool, error) {
	a := bareNumber(answer)
	if a == "" {
		return false, nil
	}
	revs, err := env.World.PodRevisions(ctx, env.Namespace)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(revs, func(r int64) bool { return strconv.FormatInt(r, 10) == a }), nil
}

// bareNumber is answer without the quotes, spaces and "rv=" (or
// "mod_revision:") a student may copy with it, or "" if what is left is not a resourceVersion.
func bareNumber(answer string) string {
	a := strings.TrimSpace(answer)
	for _, label := range []string{"resourceVersion", "mod_revision", "modRevision", "rv"} {
		a = strings.TrimPrefix(a, label)
	}
	a = strings.Trim(strings.TrimSpace(a), `:="' `)
	if a == "" || strings.Trim(a, "0123456789") != "" {
		return ""
	}
	return a
}
