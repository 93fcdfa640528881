package labs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/web/i18n"
)

// fakeWorld is a World with its answers given: the checks' logic is
// tested here, the real World (etcd) in package labhttp.
type fakeWorld struct {
	changed []string
	crds    map[string]bool
	revs    []int64
}

func (f fakeWorld) PodRevisions(context.Context, string) ([]int64, error) { return f.revs, nil }

func (f fakeWorld) LabelChanges(context.Context, string, int64) ([]string, error) {
	return f.changed, nil
}
func (f fakeWorld) WatchWindowStart(context.Context) (int64, error) { return 0, nil }
func (f fakeWorld) IsCustomResource(_ context.Context, group, resource string) (bool, error) {
	return f.crds[resource+"."+group], nil
}

// A question only the student can answer: the resourceVersion of a
// BOOKMARK their own watch got, or the Y of their own 410. Someone
// else's number, a number from before the lab, or a kubelab view's
// watch the step does not name, is wrong.
func TestPersonalAnswers(t *testing.T) {
	labs := All()
	watch := func(source, bookmark, gone string) Watch {
		w := Watch{Time: t0.Add(time.Second), User: "alice", Resource: "pods", Namespace: "alice", Source: source,
			Gone: gone, Expired: gone != "", Events: map[string]int{}}
		w.SawBookmark(bookmark)
		return w
	}
	// A watch whose initial events ended with a BOOKMARK and which got
	// another before its timeout (pods changed elsewhere meanwhile).
	twoBookmarks := watch("", "1234", "")
	twoBookmarks.SawBookmark("1301")
	// A 410 of the configmaps watch cache, which the lab does not move.
	configMapsGone := watch("", "", "too old resource version: 1 (107)")
	configMapsGone.Resource = "configmaps"
	for _, c := range []struct {
		name, lab, step, answer string
		w                       Watch
		want                    bool
	}{
		{"OK the bookmark's resourceVersion", "bookmarks", "bookmark-rv", "1234", watch("", "1234", ""), true},
		{"OK copied with its quotes", "bookmarks", "bookmark-rv", ` "1234" `, watch("", "1234", ""), true},
		{"OK from Run it live", "bookmarks", "bookmark-rv", "1234", watch(pipeline.ViewRunItLive, "1234", ""), true},
		{"ErrAnother number", "bookmarks", "bookmark-rv", "1235", watch("", "1234", ""), false},
		{"OK the first of two bookmarks", "bookmarks", "bookmark-rv", "1234", twoBookmarks, true},
		{"OK the second of two bookmarks", "bookmarks", "bookmark-rv", "1301", twoBookmarks, true},
		{"ErrBetween two bookmarks", "bookmarks", "bookmark-rv", "1300", twoBookmarks, false},
		{"ErrNo bookmark", "bookmarks", "bookmark-rv", "1234", watch("", "", ""), false},
		{"ErrThe timeline's watch", "bookmarks", "bookmark-rv", "1234", watch(pipeline.ViewTimeline, "1234", ""), false},
		{"ErrNot a number", "bookmarks", "bookmark-rv", "", watch("", "", ""), false},
		{"OK the window's start", "gone", "window-start", "107", watch("", "", "too old resource version: 1 (107)"), true},
		{"ErrX is not Y", "gone", "window-start", "1", watch("", "", "too old resource version: 1 (107)"), false},
		{"OK the timeline's 410", "gone", "window-start", "107", watch(pipeline.ViewTimeline, "", "too old resource version: 1 (107)"), true},
		{"ErrAnother resource's 410", "gone", "window-start", "107", configMapsGone, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := Find(labs, c.lab)
			_, at := l.Step(c.step)
			p := &Progress{User: "alice", Namespace: "alice", Labs: map[string]*LabProgress{c.lab: {Started: t0, StepStarted: t0, Step: at}}}
			env := Env{User: "alice", Namespace: "alice", Watches: []Watch{c.w}}
			right, err := Answer(context.Background(), l, p, c.step, c.answer, env, t0.Add(time.Minute), 10)
			if err != nil || right != c.want {
				t.Errorf("right %v (%v), want %v", right, err, c.want)
			}
		})
	}
	// Before the lab began is not during it.
	l := Find(labs, "bookmarks")
	_, at := l.Step("bookmark-rv")
	p := &Progress{User: "alice", Namespace: "alice", Labs: map[string]*LabProgress{"bookmarks": {Started: t0.Add(time.Hour), StepStarted: t0.Add(time.Hour), Step: at}}}
	if right, _ := Answer(context.Background(), l, p, "bookmark-rv", "1234", Env{Namespace: "alice", Watches: []Watch{watch("", "1234", "")}}, t0.Add(2*time.Hour), 10); right {
		t.Error("a bookmark from before the lab answered it")
	}
}

// A label step passes from the student's own write that changed what is
// stored; a write that changed nothing says why the step waits.
func TestLabelStepSaysWhyNot(t *testing.T) {
	patch := trace(time.Second, "patch", "pods", "alice", 200)
	patch.Name = "ssa-demo"
	env := func(changed []string, ts ...pipeline.Trace) Env {
		return Env{User: "alice", Namespace: "alice", StepStarted: t0, LabStarted: t0, Traces: ts, World: fakeWorld{changed: changed}}
	}
	r, err := labelChanged(context.Background(), ptr(env([]string{"ssa-demo"}, patch)))
	if err != nil || !r.Passed || !strings.Contains(r.Evidence.EN, "ssa-demo") || !strings.Contains(r.Evidence.TH, "ssa-demo") {
		t.Errorf("a label that changed: %+v %v", r, err)
	}
	r, _ = labelChanged(context.Background(), ptr(env(nil, patch)))
	if r.Passed || !strings.Contains(r.Why.EN, "changed nothing stored") || !strings.Contains(r.Why.TH, "ssa-demo") {
		t.Errorf("a label that changed nothing: %+v", r)
	}
	// Someone else's change (an admin's) is not the student's.
	r, _ = labelChanged(context.Background(), ptr(env([]string{"ssa-demo"})))
	if r.Passed || r.Why.EN != "" {
		t.Errorf("no write of the student's: %+v", r)
	}
	// Advance keeps the reason beside the step, and drops it once passed.
	labs := All()
	p := &Progress{User: "alice", Namespace: "alice", Labs: map[string]*LabProgress{"watch": {Started: t0, StepStarted: t0, Step: 1}}}
	if changed, _ := Advance(context.Background(), labs, p, env(nil, patch), t0.Add(time.Minute), 10); !changed || p.Labs["watch"].Why.EN == "" {
		t.Errorf("the reason was not kept: %+v", p.Labs["watch"])
	}
	if _, err := Advance(context.Background(), labs, p, env([]string{"ssa-demo"}, patch), t0.Add(time.Minute), 11); err != nil || p.Labs["watch"].Step != 2 || p.Labs["watch"].Why.EN != "" {
		t.Errorf("passed: %+v %v", p.Labs["watch"], err)
	}
}

func ptr[T any](v T) *T { return &v }

// The CRD steps: a create of the student's own, of a resource a CRD
// defines, in their namespace; then the inspector's reads of that kind
// and of a pod.
func TestCustomResourceSteps(t *testing.T) {
	world := fakeWorld{crds: map[string]bool{"notes.lab.example.com": true}}
	create := func(group, resource, ns string, code int) pipeline.Trace {
		tr := trace(time.Second, "create", resource, ns, code)
		tr.APIGroup, tr.Name = group, "hello"
		return tr
	}
	get := func(source, group, resource string) pipeline.Trace {
		tr := trace(time.Second, "get", resource, "alice", 200)
		tr.APIGroup, tr.Name, tr.Source = group, "hello", source
		return tr
	}
	env := func(ts ...pipeline.Trace) Env {
		return Env{User: "alice", Namespace: "alice", StepStarted: t0, LabStarted: t0, Traces: ts, World: world}
	}
	for name, c := range map[string]struct {
		check Check
		env   Env
		want  bool
	}{
		"OK a Note created":                 {customResourceCreated, env(create("lab.example.com", "notes", "alice", 201)), true},
		"ErrA built-in kind":                {customResourceCreated, env(create("apps", "deployments", "alice", 201)), false},
		"ErrIn another namespace":           {customResourceCreated, env(create("lab.example.com", "notes", "bob", 201)), false},
		"ErrRefused":                        {customResourceCreated, env(create("lab.example.com", "notes", "alice", 403)), false},
		"OK both read in the inspector":     {jsonBesideProtobuf, env(get(pipeline.ViewInspector, "lab.example.com", "notes"), get(pipeline.ViewInspector, "", "pods")), true},
		"ErrOnly the custom resource":       {jsonBesideProtobuf, env(get(pipeline.ViewInspector, "lab.example.com", "notes")), false},
		"ErrRead with kubectl, not etcd":    {jsonBesideProtobuf, env(get("", "lab.example.com", "notes"), get("", "", "pods")), false},
		"ErrA pod only":                     {jsonBesideProtobuf, env(get(pipeline.ViewInspector, "", "pods")), false},
		"ErrA built-in kind, not a CRD one": {jsonBesideProtobuf, env(get(pipeline.ViewInspector, "apps", "deployments"), get(pipeline.ViewInspector, "", "pods")), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := run(t, c.check, c.env); got != c.want {
				t.Errorf("passed %v, want %v", got, c.want)
			}
		})
	}
}

// Doing a lab again starts its steps over and keeps that it was done.
func TestRestart(t *testing.T) {
	labs := All()
	l := Find(labs, "discovery")
	p := NewProgress("alice", "", "alice")
	if err := p.Restart(l, t0, 1); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("restart before start: %v", err)
	}
	p.Start(l, t0, 1)
	lp := p.Labs["discovery"]
	lp.pass(l, Result{Evidence: i18n.Same("a")}, t0.Add(time.Second), 2)
	lp.pass(l, Result{Evidence: i18n.Same("b")}, t0.Add(2*time.Second), 3)
	if !lp.Done(l) || !lp.Finished(l) {
		t.Fatal("not done")
	}
	if err := p.Restart(l, t0.Add(time.Minute), 9); err != nil {
		t.Fatal(err)
	}
	again := p.Labs["discovery"]
	if again.Done(l) || again.Step != 0 || len(again.Passed) != 0 || again.StepRev != 9 || !again.StepStarted.Equal(t0.Add(time.Minute)) {
		t.Errorf("not started over: %+v", again)
	}
	if !again.Finished(l) || len(again.Runs) != 1 || !again.Runs[0].Finished.Equal(t0.Add(2*time.Second)) || !again.Runs[0].Started.Equal(t0) {
		t.Errorf("the finished run was lost: %+v", again.Runs)
	}
	// An unfinished way through proves nothing and is not kept.
	if err := p.Restart(l, t0.Add(2*time.Minute), 10); err != nil || len(p.Labs["discovery"].Runs) != 1 {
		t.Errorf("runs after an unfinished restart: %+v %v", p.Labs["discovery"].Runs, err)
	}
}

// The relist after a 410: the student's own list, or the timeline's
// watcher relisting on its 410; never the timeline's list as its page
// opens.
func TestRelistIsAfterA410(t *testing.T) {
	list := func(at time.Duration, source string) pipeline.Trace {
		tr := trace(at, "list", "pods", "alice", 200)
		tr.Source = source
		return tr
	}
	gone := Watch{Time: t0.Add(10 * time.Second), User: "alice", Resource: "pods", Namespace: "alice", Source: pipeline.ViewTimeline,
		Expired: true, Events: map[string]int{"ERROR": 1}, Last: map[string]time.Time{"ERROR": t0.Add(11 * time.Second)}}
	env := func(ws []Watch, ts ...pipeline.Trace) Env {
		return Env{User: "alice", Namespace: "alice", LabStarted: t0, StepStarted: t0.Add(20 * time.Second), Traces: ts, Watches: ws}
	}
	for name, c := range map[string]struct {
		env  Env
		want bool
	}{
		"OK your own list":                     {env(nil, list(30*time.Second, "")), true},
		"OK the timeline relisting on its 410": {env([]Watch{gone}, list(12*time.Second, pipeline.ViewTimeline)), true},
		"ErrThe timeline's page opening":       {env(nil, list(30*time.Second, pipeline.ViewTimeline)), false},
		"ErrThe timeline's list long after":    {env([]Watch{gone}, list(60*time.Second, pipeline.ViewTimeline)), false},
		"ErrYour list before the step":         {env(nil, list(5*time.Second, "")), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := run(t, relisted, c.env); got != c.want {
				t.Errorf("passed %v, want %v", got, c.want)
			}
		})
	}
}

// The mod revision question: a revision etcd holds for the student's own
// pods, not a neighbour's.
func TestModRevisionAnswer(t *testing.T) {
	env := &Env{Namespace: "alice", World: fakeWorld{revs: []int64{812, 840}}}
	for answer, want := range map[string]bool{"840": true, "mod_revision: 812": true, `"812"`: true, "813": false, "": false, "k8s": false} {
		if right, err := modRevisionAnswer(context.Background(), env, answer); err != nil || right != want {
			t.Errorf("%q: right %v (%v), want %v", answer, right, err, want)
		}
	}
}

// Evidence is in both languages; progress stored when it was a plain
// English string still reads.
func TestEvidenceInBothLanguages(t *testing.T) {
	var p Passed
	if err := json.Unmarshal([]byte(`{"at":"2026-12-01T10:00:00Z","evidence":"get /apis → HTTP 200 at 10:00:00"}`), &p); err != nil || p.Evidence.EN != "get /apis → HTTP 200 at 10:00:00" || p.Evidence.In(i18n.Thai) != p.Evidence.EN {
		t.Errorf("old progress: %+v %v", p, err)
	}
	b, err := json.Marshal(Passed{At: t0, Evidence: i18n.Text{EN: "x", TH: "ก"}})
	if err != nil || json.Unmarshal(b, &p) != nil || p.Evidence != (i18n.Text{EN: "x", TH: "ก"}) {
		t.Errorf("round trip: %s %+v %v", b, p, err)
	}
	tr := trace(time.Second, "list", "pods", "alice", 200)
	if d := describe(&tr); d.EN != "list pods in alice → HTTP 200 at 10:00:01" || d.TH != "list pods ใน alice → HTTP 200 เวลา 10:00:01" {
		t.Errorf("describe: %+v", d)
	}
}

// TestGoneIsYourOwnPodsWatch: the 410 lab moves the pods watch cache's
// window, so its "Get a 410" step wants a 410 on a watch of the student's
// own pods; a watch of configmaps from resourceVersion 1 passed it.
func TestGoneIsYourOwnPodsWatch(t *testing.T) {
	l := Find(All(), "gone")
	step, _ := l.Step("gone")
	for name, c := range map[string]struct {
		resource, namespace string
		want                bool
	}{
		"OK your pods":           {"pods", "alice", true},
		"ErrYour configmaps":     {"configmaps", "alice", false},
		"ErrAnother's namespace": {"pods", "bob", false},
	} {
		w := Watch{Time: t0.Add(time.Second), User: "alice", Resource: c.resource, Namespace: c.namespace,
			Expired: true, Gone: "too old resource version: 1 (107)", Events: map[string]int{"ERROR": 1}}
		env := Env{User: "alice", Namespace: "alice", LabStarted: t0, StepStarted: t0, Watches: []Watch{w}}
		r, err := step.Check(context.Background(), &env)
		if err != nil || r.Passed != c.want {
			t.Errorf("%s: passed %v (%v), want %v", name, r.Passed, err, c.want)
		}
	}
}
