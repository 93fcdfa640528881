package lab

import (
	"regexp"
	"strings"
)

// Answers to the questions only one student can know: what the server
// sent that student's own watches. Another student's number is another
// number.

// bookmarkAnswer is right when it is the resourceVersion of a BOOKMARK
// sent on one of the student's watches of their pods during the lab.
func bookmarkAnswer(env *Env, answer string) bool {
	a := bareNumber(answer)
	isPods := podsWatch(env)
	return a != "" && lastWatch(env, env.LabStarted, func(w *Watch) bool { return isPods(w) && w.Bookmark == a }) != nil
}

// tooOld is kube-apiserver's message for a watch from before the watch
// cache's window: the resourceVersion asked for, and where it starts.
var tooOld = regexp.MustCompile(`too old resource version: (\d+) \((\d+)\)`)

// windowStartAnswer is right when it is the Y of a "too old resource
// version: X (Y)" sent on one of the student's watches during the lab.
func windowStartAnswer(env *Env, answer string) bool {
	a := bareNumber(answer)
	return a != "" && lastWatch(env, env.LabStarted, func(w *Watch) bool {
		m := tooOld.FindStringSubmatch(w.Gone)
		return m != nil && m[2] == a
	}) != nil
}

// bareNumber is answer without the quotes, spaces and "rv=" a student may
// copy with it, or "" if what is left is not a resourceVersion.
func bareNumber(answer string) string {
	a := strings.TrimSpace(answer)
	a = strings.TrimPrefix(strings.TrimPrefix(a, "resourceVersion"), "rv")
	a = strings.Trim(strings.TrimSpace(a), `:="' `)
	if a == "" || strings.Trim(a, "0123456789") != "" {
		return ""
	}
	return a
}
