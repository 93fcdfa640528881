package labs

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/web/i18n"
)

// Progress is one student's progress through the labs, stored in etcd.
type Progress struct {
	User  string `json:"user"`
	Class string `json:"class,omitempty"`
	// Namespace is where the student works, where checks look.
	Namespace string `json:"namespace"`
	// Labs holds the labs the student has started, by lab id.
	Labs map[string]*LabProgress `json:"labs"`
	// Current is the lab the student opened last.
	Current string `json:"current,omitempty"`
	// Updated is when a step was last passed or a lab started: what
	// "stuck" is measured from.
	Updated time.Time `json:"updated"`
	// Revision is the store's version of what was read (0: never stored);
	// a Put of an older one is refused with ErrConflict.
	Revision int64 `json:"-"`
}

// LabProgress is where a student is in one lab.
type LabProgress struct {
	Started time.Time `json:"started"`
	// Step is the index of the current step; len(Steps) when done.
	Step        int       `json:"step"`
	StepStarted time.Time `json:"stepStarted"`
	// StepRev is etcd's revision when the current step began.
	StepRev int64             `json:"stepRev"`
	Passed  map[string]Passed `json:"passed,omitempty"`
	Tries   map[string]int    `json:"tries,omitempty"`
	// Why is what the current step's check said of the student's near
	// miss (Result.Why), shown beside the step until it passes.
	Why i18n.Text `json:"why,omitzero"`
	// Runs are the earlier times the student finished the lab, before
	// doing it again: the steps start over, the record of having done it
	// stays.
	Runs []Run `json:"runs,omitempty"`
}

// Run is one finished way through a lab.
type Run struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// Passed records one passed step.
type Passed struct {
	At       time.Time `json:"at"`
	Evidence i18n.Text `json:"evidence,omitzero"`
}

// Done reports whether every step of l is passed.
func (p *LabProgress) Done(l *Lab) bool { return p != nil && p.Step >= len(l.Steps) }

// Finished reports whether the student has ever finished l: now, or
// before doing it again.
func (p *LabProgress) Finished(l *Lab) bool { return p.Done(l) || (p != nil && len(p.Runs) > 0) }

// ErrNotFound is a Store's answer for a student with no progress yet.
var ErrNotFound = errors.New("no lab progress")

// ErrConflict is a Store's answer to a Put of progress that changed since
// it was read (another replica checked the same student): read it again.
var ErrConflict = errors.New("lab progress changed since it was read")

// Store keeps progress.
type Store interface {
	// Get returns the user's progress, or ErrNotFound.
	Get(ctx context.Context, user string) (*Progress, error)
	// Put stores p if it is unchanged since it was read (by Revision),
	// and updates p.Revision; else ErrConflict.
	Put(ctx context.Context, p *Progress) error
	// List returns everyone's progress.
	List(ctx context.Context) ([]*Progress, error)
}

// NewProgress is an empty progress for user.
func NewProgress(user, class, namespace string) *Progress {
	return &Progress{User: user, Class: class, Namespace: namespace, Labs: map[string]*LabProgress{}}
}

// Start begins lab l (if not begun) at now and revision rev, and makes it
// current. It reports whether anything changed.
func (p *Progress) Start(l *Lab, now time.Time, rev int64) bool {
	changed := p.Current != l.ID
	p.Current = l.ID
	if p.Labs == nil {
		p.Labs = map[string]*LabProgress{}
	}
	if _, ok := p.Labs[l.ID]; !ok {
		p.Labs[l.ID] = &LabProgress{Started: now, StepStarted: now, StepRev: rev, Passed: map[string]Passed{}}
		p.Updated = now
		changed = true
	}
	return changed
}

// ErrNotStarted answers a restart of a lab the student has not begun.
var ErrNotStarted = errors.New("that lab is not started")

// Restart begins lab l again at now and revision rev: every step is to
// do again, checked only from what the student does from now on. A
// finished way through it is kept in Runs; an unfinished one is dropped,
// as it proved nothing yet.
func (p *Progress) Restart(l *Lab, now time.Time, rev int64) error {
	old := p.Labs[l.ID]
	if old == nil {
		return ErrNotStarted
	}
	runs := old.Runs
	if old.Done(l) {
		runs = append(runs, Run{Started: old.Started, Finished: old.StepStarted})
	}
	p.Labs[l.ID] = &LabProgress{Started: now, StepStarted: now, StepRev: rev, Passed: map[string]Passed{}, Runs: runs}
	p.Current, p.Updated = l.ID, now
	return nil
}

// pass marks the current step passed; the next one begins now.
func (lp *LabProgress) pass(l *Lab, r Result, now time.Time, rev int64) {
	if lp.Passed == nil {
		lp.Passed = map[string]Passed{}
	}
	lp.Passed[l.Steps[lp.Step].ID] = Passed{At: now, Evidence: r.Evidence}
	lp.Step++
	lp.StepStarted, lp.StepRev, lp.Why = now, rev, i18n.Text{}
}

// Advance runs the current step's check of every started lab that is not
// done, passing steps while their checks pass (a question step waits for
// its answer). It reports whether anything was passed.
func Advance(ctx context.Context, labs []*Lab, p *Progress, env Env, now time.Time, rev int64) (bool, error) {
	changed := false
	var errs []error
	for _, l := range labs {
		lp := p.Labs[l.ID]
		if lp == nil {
			continue
		}
		for !lp.Done(l) {
			st := &l.Steps[lp.Step]
			if st.Check == nil {
				break
			}
			e := stepEnv(env, lp, st)
			r, err := st.Check(ctx, &e)
			if err != nil {
				errs = append(errs, err)
				break
			}
			if !r.Passed {
				if lp.Why != r.Why {
					lp.Why, changed = r.Why, true
				}
				break
			}
			lp.pass(l, r, now, rev)
			p.Updated, changed = now, true
		}
	}
	return changed, errors.Join(errs...)
}

// ErrNotCurrent answers an answer to a step that is not the lab's current one.
var ErrNotCurrent = errors.New("that step is not the current one")

// ErrNotQuestion answers an answer to a step that is checked from what happened.
var ErrNotQuestion = errors.New("that step is checked from what happens on the server, not from an answer")

// stepEnv is what the current step of a lab sees of env: its own times,
// and only the traces and watches that may count for it.
func stepEnv(env Env, lp *LabProgress, st *Step) Env {
	e := env
	e.LabStarted, e.StepStarted, e.StepRev = lp.Started, lp.StepStarted, lp.StepRev
	e.Traces, e.Watches = countable(env.Traces, env.Watches, st.Views)
	return e
}

// Answer grades an answer to the current step of lab l against what env
// says happened, passing it if it is right. It reports whether the
// answer was right.
func Answer(ctx context.Context, l *Lab, p *Progress, stepID, answer string, env Env, now time.Time, rev int64) (bool, error) {
	lp := p.Labs[l.ID]
	if lp == nil || lp.Done(l) || l.Steps[lp.Step].ID != stepID {
		return false, ErrNotCurrent
	}
	st := &l.Steps[lp.Step]
	if !st.IsQuestion() {
		return false, ErrNotQuestion
	}
	if lp.Tries == nil {
		lp.Tries = map[string]int{}
	}
	lp.Tries[stepID]++
	e := stepEnv(env, lp, st)
	right, err := st.Answer(ctx, &e, answer)
	if err != nil {
		return false, err
	}
	if !right {
		return false, nil
	}
	shown := answer
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	lp.pass(l, Result{Evidence: i18n.Text{EN: "answered “" + shown + "”", TH: "ตอบว่า “" + shown + "”"}}, now, rev)
	p.Updated = now
	return true, nil
}

// countable keeps the traces and watches that may count for a step: the
// student's own, and those of the views the step names.
func countable(traces []pipeline.Trace, watches []Watch, views []string) ([]pipeline.Trace, []Watch) {
	var ts []pipeline.Trace
	for _, t := range traces {
		if t.Source == "" || slices.Contains(views, t.Source) {
			ts = append(ts, t)
		}
	}
	var ws []Watch
	for _, w := range watches {
		if w.Source == "" || slices.Contains(views, w.Source) {
			ws = append(ws, w)
		}
	}
	return ts, ws
}
