package labs

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/web/i18n"
)

// Every lab and step is written in both languages and is either checked
// from what happened or answered, never both or neither.
func TestLabsAreComplete(t *testing.T) {
	labs := All()
	if len(labs) != 7 {
		t.Fatalf("%d labs, want the lesson's 7", len(labs))
	}
	ids := map[string]bool{}
	for _, l := range labs {
		if ids[l.ID] {
			t.Errorf("lab id %q twice", l.ID)
		}
		ids[l.ID] = true
		for _, tx := range []i18n.Text{l.Title, l.Intro} {
			if tx.EN == "" || tx.TH == "" {
				t.Errorf("%s: untranslated %+v", l.ID, tx)
			}
		}
		steps := map[string]bool{}
		for _, s := range l.Steps {
			if steps[s.ID] {
				t.Errorf("%s: step %q twice", l.ID, s.ID)
			}
			steps[s.ID] = true
			for _, tx := range []i18n.Text{s.Title, s.Do, s.Hint, s.How} {
				if tx.EN == "" || tx.TH == "" {
					t.Errorf("%s/%s: untranslated %+v", l.ID, s.ID, tx)
				}
			}
			if (s.Check == nil) == (s.Answer == nil) {
				t.Errorf("%s/%s: want exactly one of Check and Answer", l.ID, s.ID)
			}
		}
		if l.Steps[0].Check == nil {
			t.Errorf("%s: the first step should be something done, not answered", l.ID)
		}
	}
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func trace(at time.Duration, verb, resource, ns string, code int, records ...pipeline.Record) pipeline.Trace {
	return pipeline.Trace{Time: t0.Add(at), User: "alice", Verb: verb, Resource: resource, Namespace: ns,
		Path: "/api/v1/namespaces/" + ns + "/" + resource, Code: code, Records: records}
}

func run(t *testing.T, c Check, env Env) bool {
	t.Helper()
	r, err := c(context.Background(), &env)
	if err != nil {
		t.Fatal(err)
	}
	return r.Passed
}

func TestPipelineChecks(t *testing.T) {
	authn := pipeline.Record{Stage: pipeline.StageAuthentication, Decision: pipeline.Allow}
	denied := pipeline.Record{Stage: pipeline.StageAuthorization, Decision: pipeline.Deny}
	allowed := pipeline.Record{Stage: pipeline.StageAuthorization, Decision: pipeline.Allow}
	patch := pipeline.Record{Stage: pipeline.StageMutatingAdmission, Plugin: "ServiceAccount", Decision: pipeline.Mutate, Patch: json.RawMessage(`[{"op":"add"}]`)}
	refused := pipeline.Record{Stage: pipeline.StageValidatingAdmission, Plugin: "RequireLimits", Decision: pipeline.Deny}
	env := func(ts ...pipeline.Trace) Env {
		return Env{User: "alice", Namespace: "alice", StepStarted: t0, LabStarted: t0, Traces: ts}
	}
	for name, c := range map[string]struct {
		check Check
		env   Env
		want  bool
	}{
		"OK denied by RBAC":                 {rbacDenied, env(trace(time.Second, "list", "pods", "kube-system", 403, authn, denied)), true},
		"ErrDenial before the step":         {rbacDenied, env(trace(-time.Second, "list", "pods", "kube-system", 403, authn, denied)), false},
		"ErrRefused by admission, not RBAC": {rbacDenied, env(trace(time.Second, "create", "pods", "alice", 403, authn, allowed, patch, refused)), false},
		"OK created after a patch":          {admissionPatched, env(trace(time.Second, "create", "pods", "alice", 201, authn, allowed, patch)), true},
		"ErrPatched but refused":            {admissionPatched, env(trace(time.Second, "create", "pods", "alice", 403, authn, allowed, patch, refused)), false},
		"ErrNothing patched":                {admissionPatched, env(trace(time.Second, "create", "configmaps", "alice", 201, authn, allowed)), false},
		"ErrAnother namespace":              {admissionPatched, env(trace(time.Second, "create", "pods", "bob", 201, authn, allowed, patch)), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := run(t, c.check, c.env); got != c.want {
				t.Errorf("passed %v, want %v", got, c.want)
			}
		})
	}
}

func TestWatchChecks(t *testing.T) {
	w := func(at time.Duration, rv string, events map[string]int, expired bool) Watch {
		return Watch{Time: t0.Add(at), User: "alice", Resource: "pods", Namespace: "alice", ResourceVersion: rv, Events: events,
			Last: map[string]time.Time{}, Expired: expired}
	}
	env := func(ws ...Watch) Env {
		return Env{User: "alice", Namespace: "alice", StepStarted: t0, LabStarted: t0.Add(-time.Minute), Watches: ws}
	}
	for name, c := range map[string]struct {
		check Check
		env   Env
		want  bool
	}{
		"OK a watch":                 {watchOnPods, env(w(time.Second, "", nil, false)), true},
		"ErrOther namespace":         {watchOnPods, env(Watch{Time: t0.Add(time.Second), Resource: "pods", Namespace: "bob"}), false},
		"OK a MODIFIED sent":         {watchDelivered("MODIFIED"), env(w(-time.Second, "", map[string]int{"ADDED": 6, "MODIFIED": 1}, false)), true},
		"ErrOnly ADDED":              {watchDelivered("MODIFIED"), env(w(time.Second, "", map[string]int{"ADDED": 6}, false)), false},
		"OK resumed":                 {resumed, env(w(time.Second, "1994", nil, false)), true},
		"ErrResumed from nothing":    {resumed, env(w(time.Second, "", nil, false)), false},
		"ErrResume refused with 410": {resumed, env(w(time.Second, "1", map[string]int{"ERROR": 1}, true)), false},
		"OK 410":                     {expired, env(w(time.Second, "1", map[string]int{"ERROR": 1}, true)), true},
		"Err410 before the step":     {expired, env(w(-time.Second, "1", map[string]int{"ERROR": 1}, true)), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := run(t, c.check, c.env); got != c.want {
				t.Errorf("passed %v, want %v", got, c.want)
			}
		})
	}
}

// Advance passes steps in order, each only from what happened after it
// began; a question waits for its answer.
func TestAdvanceAndAnswer(t *testing.T) {
	labs := All()
	etcd := Find(labs, "etcd")
	p := NewProgress("alice", "", "alice")
	p.Start(etcd, t0, 10)
	inspector := pipeline.Trace{Time: t0.Add(time.Second), User: "alice", Verb: "GET", Path: "/ui/etcd/value", Code: 200}
	now := t0.Add(2 * time.Second)
	changed, err := Advance(context.Background(), labs, p, Env{User: "alice", Namespace: "alice", Traces: []pipeline.Trace{inspector}}, now, 11)
	if err != nil || !changed || p.Labs["etcd"].Step != 1 || p.Labs["etcd"].StepRev != 11 || !p.Updated.Equal(now) {
		t.Fatalf("advance: %v %v %+v", changed, err, p.Labs["etcd"])
	}
	// The question is not passed by more requests.
	if changed, _ := Advance(context.Background(), labs, p, Env{Traces: []pipeline.Trace{inspector}}, now, 12); changed {
		t.Fatal("a question step passed without an answer")
	}
	if _, err := Answer(context.Background(), etcd, p, "why-not", "skips", Env{}, now, 12); err != ErrNotCurrent {
		t.Errorf("answering ahead: %v", err)
	}
	if right, err := Answer(context.Background(), etcd, p, "prefix", "json", Env{}, now, 12); right || err != nil {
		t.Errorf("wrong answer: %v %v", right, err)
	}
	for _, a := range []string{`k8s\x00`, "6b 38 73 00", ` "k8s\0" `} {
		q := NewProgress("alice", "", "alice")
		q.Start(etcd, t0, 10)
		q.Labs["etcd"].Step = 1
		if right, err := Answer(context.Background(), etcd, q, "prefix", a, Env{}, now, 12); !right || err != nil {
			t.Errorf("%q: %v %v", a, right, err)
		}
	}
	if right, _ := Answer(context.Background(), etcd, p, "prefix", `k8s\x00`, Env{}, now, 13); !right || p.Labs["etcd"].Tries["prefix"] != 2 {
		t.Errorf("right answer: %v, tries %d", right, p.Labs["etcd"].Tries["prefix"])
	}
	if _, err := Answer(context.Background(), Find(labs, "discovery"), p, "groups", "x", Env{}, now, 13); err != ErrNotCurrent {
		t.Errorf("a lab not started: %v", err)
	}
}

// A kubelab view's requests count only for the steps that name the view:
// the watch timeline's lanes, which watch by themselves once the page is
// open, do not pass "see it arrive", and the inspector's access check,
// denied to a student, does not pass "be denied by RBAC".
func TestViewsCountOnlyForStepsThatNameThem(t *testing.T) {
	labs := All()
	watched := func(source string) Env {
		return Env{User: "alice", Namespace: "alice", Watches: []Watch{{Time: t0.Add(time.Second), User: "alice", Resource: "pods",
			Namespace: "alice", Source: source, Events: map[string]int{"MODIFIED": 1}}}}
	}
	denied := func(source string) Env {
		tr := trace(time.Second, "list", "secrets", "", 403, pipeline.Record{Stage: pipeline.StageAuthorization, Decision: pipeline.Deny})
		tr.Source = source
		return Env{User: "alice", Namespace: "alice", Traces: []pipeline.Trace{tr}}
	}
	for _, c := range []struct {
		lab, step string
		env       Env
		want      bool
	}{
		{"watch", "see-modified", watched(pipeline.ViewTimeline), false},
		{"watch", "see-modified", watched(pipeline.ViewRunItLive), true},
		{"watch", "see-modified", watched(""), true},
		{"pipeline", "deny", denied(pipeline.ViewInspector), false},
		{"pipeline", "deny", denied(""), true},
	} {
		l := Find(labs, c.lab)
		_, at := l.Step(c.step)
		p := &Progress{User: "alice", Namespace: "alice", Labs: map[string]*LabProgress{c.lab: {Started: t0, StepStarted: t0, Step: at}}}
		if _, err := Advance(context.Background(), labs, p, c.env, t0.Add(time.Minute), 10); err != nil {
			t.Fatal(err)
		}
		if passed := p.Labs[c.lab].Step > at; passed != c.want {
			t.Errorf("%s/%s from %+v: passed %v, want %v", c.lab, c.step, c.env, passed, c.want)
		}
	}
}

// Every Text of every lab, step and choice has both languages.
func TestLabsAreTranslated(t *testing.T) {
	for _, m := range i18n.Untranslated(All()) {
		t.Error(m)
	}
}
