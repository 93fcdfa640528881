// Package labs is the lesson's hands-on labs: seven labs, one per part of
// the lesson, each a list of steps. A step is checked from what actually
// happened on the server — the requests the pipeline traced for the
// student, the watch streams the server sent them and the state in etcd —
// never from which command was typed, so kubectl, curl and the browser all
// count the same.
//
// The package is pure logic: the server feeds a check an Env built from
// real traces, real watch observations and a World that reads real state.
package labs

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/web/i18n"
)

// Lab is one hands-on lab.
type Lab struct {
	ID    string
	Title i18n.Text
	Intro i18n.Text
	// Lesson is the lesson section the lab practises (a path with an anchor).
	Lesson string
	Steps  []Step
}

// Step is one thing to do and how to know it was done.
type Step struct {
	ID    string
	Title i18n.Text
	// Do says what to do; Command is a way to do it (any way counts).
	Do      i18n.Text
	Command string
	Hint    i18n.Text
	// How says, honestly, what the check looks at.
	How i18n.Text
	// Choices makes the step a question: the student picks one. Without
	// choices but with Answer set, the student types the answer.
	Choices []Choice
	// Answer checks a typed or chosen answer against what happened: a
	// question asks, where it can, for what only this student can know
	// (the resourceVersion of the BOOKMARK their own watch received), so
	// the answer cannot be passed around the class. nil for steps
	// checked from what happened on the server.
	Answer Grade `json:"-"`
	// Check decides from what happened; nil for answer steps.
	Check Check `json:"-"`
	// Open is the page (a path with an anchor) where a step that cannot
	// be done from the terminal is done: the etcd inspector's steps.
	Open string
	// Views are the kubelab views (pipeline.View*) whose requests count
	// for the step, besides the student's own clients: a view that sends
	// requests by itself once its page is open (the timeline's lanes,
	// the inspector's access check) must not pass a step the student did
	// not do.
	Views []string `json:"-"`
}

// Grade says whether an answer is right, from what env says happened.
type Grade func(ctx context.Context, env *Env, answer string) (bool, error)

// sameForEveryone grades a concept question, whose right answer is the
// same for the whole class.
func sameForEveryone(right func(answer string) bool) Grade {
	return func(_ context.Context, _ *Env, answer string) (bool, error) { return right(answer), nil }
}

// Choice is one option of a question step.
type Choice struct {
	ID   string
	Text i18n.Text
}

// IsQuestion reports whether the student answers the step rather than does it.
func (s *Step) IsQuestion() bool { return s.Answer != nil }

// Check reports whether the step has been done, with the evidence.
type Check func(ctx context.Context, env *Env) (Result, error)

// Result is a check's verdict.
type Result struct {
	Passed bool
	// Evidence says what proved it, for the student ("watch on pods in
	// alice at 10:02:03").
	Evidence i18n.Text
	// Why says, when the step has not passed, what the student did that
	// came close and why it did not count ("your last label changed
	// nothing stored"); empty when there is nothing of theirs to explain.
	Why i18n.Text
}

// Env is what a check sees: who, since when, and what happened.
type Env struct {
	User      string
	Namespace string
	// LabStarted is when the student began the lab; StepStarted when the
	// current step began, with the etcd revision at that moment.
	LabStarted  time.Time
	StepStarted time.Time
	StepRev     int64
	// Traces are the student's requests as the pipeline traced them,
	// oldest first.
	Traces []pipeline.Trace
	// Watches are the watch streams the server sent the student.
	Watches []Watch
	World   World
}

// Watch is one watch stream as the server observed it while serving it.
type Watch struct {
	Time      time.Time `json:"time"`
	User      string    `json:"user"`
	APIGroup  string    `json:"apiGroup,omitempty"`
	Resource  string    `json:"resource"`
	Namespace string    `json:"namespace,omitempty"`
	// ResourceVersion is the one the watch started from ("" for none).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Bookmarks       bool   `json:"allowWatchBookmarks,omitempty"`
	// Events counts the events sent, by type (ADDED, MODIFIED, BOOKMARK,
	// ERROR...), with the time each type was last sent.
	Events map[string]int       `json:"events"`
	Last   map[string]time.Time `json:"-"`
	// Source is the kubelab view that opened the watch for the student
	// (pipeline.Trace.Source); empty for the student's own client.
	Source string `json:"source,omitempty"`
	// BookmarkRVs are the resourceVersions of the BOOKMARKs sent, in
	// order, the last maxBookmarkRVs of them: the initial events' end and
	// the one before the timeout are both a student's to read.
	BookmarkRVs []string `json:"bookmarkResourceVersions,omitempty"`
	// Expired is set when the stream ended with 410 Expired; Gone is
	// the message it ended with ("too old resource version: 1 (107)").
	Expired bool   `json:"expired,omitempty"`
	Gone    string `json:"gone,omitempty"`
	Done    bool   `json:"done,omitempty"`
}

// maxBookmarkRVs bounds what a watch keeps of its BOOKMARKs: a watch
// gets one a minute, and may stay open for hours.
const maxBookmarkRVs = 16

// SawBookmark records a BOOKMARK sent on w at resourceVersion rv, and
// reports whether it is one w had not sent before.
func (w *Watch) SawBookmark(rv string) bool {
	if rv == "" || slices.Contains(w.BookmarkRVs, rv) {
		return false
	}
	w.BookmarkRVs = append(w.BookmarkRVs, rv)
	if len(w.BookmarkRVs) > maxBookmarkRVs {
		w.BookmarkRVs = w.BookmarkRVs[len(w.BookmarkRVs)-maxBookmarkRVs:]
	}
	return true
}

// World reads the state the labs change. Its methods read etcd and the
// API's stores; they never trust the student's word.
type World interface {
	// LabelChanges names the pods of ns whose labels or annotations were
	// changed after revision rev.
	LabelChanges(ctx context.Context, ns string, rev int64) ([]string, error)
	// WatchWindowStart is where the pods watch cache's window starts: a
	// watch from an older resourceVersion gets 410 too old resource version.
	WatchWindowStart(ctx context.Context) (int64, error)
	// PodRevisions are the mod revisions etcd holds for the keys of the
	// pods of ns (a pod's resourceVersion is its key's mod revision).
	PodRevisions(ctx context.Context, ns string) ([]int64, error)
	// IsCustomResource reports whether a CustomResourceDefinition stored
	// in etcd defines resource in group.
	IsCustomResource(ctx context.Context, group, resource string) (bool, error)
}

// Find returns the lab with id, or nil.
func Find(labs []*Lab, id string) *Lab {
	i := slices.IndexFunc(labs, func(l *Lab) bool { return l.ID == id })
	if i < 0 {
		return nil
	}
	return labs[i]
}

// Step returns the step with id and its index, or nil.
func (l *Lab) Step(id string) (*Step, int) {
	for i := range l.Steps {
		if l.Steps[i].ID == id {
			return &l.Steps[i], i
		}
	}
	return nil, -1
}

// since keeps the traces at or after t.
func since(ts []pipeline.Trace, t time.Time) []pipeline.Trace {
	var out []pipeline.Trace
	for _, tr := range ts {
		if !tr.Time.Before(t) {
			out = append(out, tr)
		}
	}
	return out
}

// TraceMatch is a condition on one trace.
type TraceMatch func(*pipeline.Trace) bool

// lastTrace finds the newest trace since t that every match accepts.
func lastTrace(env *Env, t time.Time, matches ...TraceMatch) *pipeline.Trace {
	ts := since(env.Traces, t)
	for i := len(ts) - 1; i >= 0; i-- {
		ok := true
		for _, m := range matches {
			if !m(&ts[i]) {
				ok = false
				break
			}
		}
		if ok {
			return &ts[i]
		}
	}
	return nil
}

func verb(vs ...string) TraceMatch {
	return func(t *pipeline.Trace) bool { return slices.Contains(vs, t.Verb) }
}

func resource(group, res string) TraceMatch {
	return func(t *pipeline.Trace) bool { return t.APIGroup == group && t.Resource == res && t.Subresource == "" }
}

func inNamespace(ns string) TraceMatch {
	return func(t *pipeline.Trace) bool { return t.Namespace == ns }
}

func code(lo, hi int) TraceMatch {
	return func(t *pipeline.Trace) bool { return t.Code >= lo && t.Code <= hi }
}

func path(p string, prefix bool) TraceMatch {
	return func(t *pipeline.Trace) bool {
		return t.Path == p || (prefix && strings.HasPrefix(t.Path, p+"/"))
	}
}

// record finds a stage's record with the decision.
func record(t *pipeline.Trace, stage pipeline.Stage, d pipeline.Decision) *pipeline.Record {
	for i := range t.Records {
		if t.Records[i].Stage == stage && t.Records[i].Decision == d {
			return &t.Records[i]
		}
	}
	return nil
}

// lastWatch finds the newest watch since t that match accepts.
func lastWatch(env *Env, t time.Time, match func(*Watch) bool) *Watch {
	for i := len(env.Watches) - 1; i >= 0; i-- {
		w := &env.Watches[i]
		if !w.Time.Before(t) && match(w) {
			return w
		}
	}
	return nil
}

// describe says what a traced request did, in both languages.
func describe(t *pipeline.Trace) i18n.Text {
	what := t.Verb + " " + t.Path
	where := ""
	if t.Resource != "" {
		what = t.Verb + " " + t.Resource
		if t.Name != "" {
			what += "/" + t.Name
		}
		where = t.Namespace
	}
	out := i18n.Same(what)
	if where != "" {
		out = out.Plus(i18n.Text{EN: " in " + where, TH: " ใน " + where})
	}
	code, at := strconv.Itoa(t.Code), t.Time.Format(time.TimeOnly)
	return out.Plus(i18n.Text{EN: " → HTTP " + code + " at " + at, TH: " → HTTP " + code + " เวลา " + at})
}
