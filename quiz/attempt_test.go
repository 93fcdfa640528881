package quiz_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web/i18n"
)

// TestAttemptOptions: one attempt always shows the same ids in the same
// order; across attempts the ids are new and the right answer moves
// around, so neither an id nor a position carries the key.
func TestAttemptOptions(t *testing.T) {
	q := watchQuiz(t)
	first := q.NewAttempt("alice", "", time.Now())
	texts := func(v quiz.View, i int) (ids, texts []string) {
		for _, o := range v.Questions[i].Options {
			ids, texts = append(ids, o.ID), append(texts, o.Text)
		}
		return ids, texts
	}
	a, b := q.View(first, i18n.English), q.View(first, i18n.English)
	for i := range a.Questions {
		ia, _ := texts(a, i)
		ib, _ := texts(b, i)
		if !slices.Equal(ia, ib) {
			t.Errorf("question %d: one attempt, two views: %v and %v", i, ia, ib)
		}
	}
	right, _ := q.Questions[0].Option(lessonAnswers["gone-410"])
	positions, orders, seen := map[int]int{}, map[string]bool{}, map[string]bool{}
	for range 200 {
		v := q.View(q.NewAttempt("alice", "", time.Now()), i18n.English)
		ids, order := texts(v, 0)
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("option id %s shown by two attempts", id)
			}
			seen[id] = true
		}
		orders[strings.Join(order, "|")] = true
		positions[slices.Index(order, right.Text.EN)]++
		if len(order) != 4 || slices.Index(order, right.Text.EN) < 0 {
			t.Fatalf("options lost or duplicated: %v", order)
		}
	}
	if len(positions) != 4 || len(orders) < 12 {
		t.Errorf("200 attempts: right answer at positions %v, %d distinct orders", positions, len(orders))
	}
	if second := q.NewAttempt("alice", "", time.Now()); second.ID == first.ID || len(first.ID) != 32 {
		t.Errorf("attempt ids %q and %q", first.ID, second.ID)
	}
}

// keyOf is the id attempt a shows for the bank's option of question qid.
func keyOf(t *testing.T, q *quiz.Quiz, a *quiz.Attempt, qid, option string) string {
	t.Helper()
	qu, _ := q.Question(qid)
	want, _ := qu.Option(option)
	for _, qv := range q.View(a, i18n.English).Questions {
		for _, o := range qv.Options {
			if qv.ID == qid && o.Text == want.Text.EN {
				return o.ID
			}
		}
	}
	t.Fatalf("no option %s/%s", qid, option)
	return ""
}

// TestKeysDoNotTransfer: an option id from another attempt names nothing
// in this one; it is refused, not graded.
func TestKeysDoNotTransfer(t *testing.T) {
	q := watchQuiz(t)
	mine, theirs := q.NewAttempt("alice", "", time.Now()), q.NewAttempt("bob", "", time.Now())
	stolen := []quiz.Answer{{Question: "gone-410", Choice: keyOf(t, q, theirs, "gone-410", lessonAnswers["gone-410"])}}
	var inv *quiz.InvalidError
	if err := q.GradeAttempt(mine, stolen, i18n.English, time.Now()); !errors.As(err, &inv) || inv.Problems[0].Field != "answers[0].choice" || inv.Problems[0].Type != quiz.ProblemNotFound {
		t.Fatalf("another attempt's id: %v", err)
	}
	if strings.Contains(inv.Error(), "compacted-relist") {
		t.Errorf("the error names the bank's option: %v", inv)
	}
	own := []quiz.Answer{{Question: "gone-410", Choice: keyOf(t, q, mine, "gone-410", lessonAnswers["gone-410"])}}
	if err := q.GradeAttempt(mine, own, i18n.English, time.Now()); err != nil || mine.Result.ScoreGiven != 1 || mine.Answers[0].Choice != "compacted-relist" || mine.Open() {
		t.Errorf("own id: %v, %+v", err, mine)
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		p         quiz.Policy
		submitted int
		closed    bool
		reveals   bool
		left      int
	}{
		{quiz.Policy{Attempts: 3, Reveal: quiz.RevealAfterSubmit}, 1, false, true, 2},
		{quiz.Policy{Attempts: 3, Reveal: quiz.RevealAfterLastAttempt}, 2, false, false, 1},
		{quiz.Policy{Attempts: 3, Reveal: quiz.RevealAfterLastAttempt}, 3, false, true, 0},
		{quiz.Policy{Attempts: 3, Reveal: quiz.RevealAfterLastAttempt}, 1, true, true, 2},
		{quiz.Policy{Attempts: 0, Reveal: quiz.RevealAfterLastAttempt}, 50, false, false, -1},
		{quiz.Policy{Attempts: 3, Reveal: quiz.RevealAfterClose}, 3, false, false, 0},
		{quiz.Policy{Attempts: 3, Reveal: quiz.RevealAfterClose}, 1, true, true, 2},
		{quiz.Policy{Attempts: 1, Reveal: quiz.RevealNever}, 1, false, false, 0},
		{quiz.Policy{Attempts: 1, Reveal: quiz.RevealNever}, 1, true, false, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Reveals(tt.submitted, tt.closed); got != tt.reveals {
			t.Errorf("%+v after %d (closed %v): reveals %v", tt.p, tt.submitted, tt.closed, got)
		}
		if got := tt.p.AttemptsLeft(tt.submitted); got != tt.left {
			t.Errorf("%+v after %d: %d left, want %d", tt.p, tt.submitted, got, tt.left)
		}
	}
	if _, err := quiz.ParseReveal("sometimes"); err == nil {
		t.Error("ParseReveal accepted an unknown policy")
	}
}

// graded grades answers given in the bank's ids on a fresh attempt.
func graded(t *testing.T, q *quiz.Quiz, answers []quiz.Answer) *quiz.Attempt {
	t.Helper()
	a := q.NewAttempt("alice", "", time.Now())
	for i, ans := range answers {
		if ans.Choice != "" {
			answers[i].Choice = keyOf(t, q, a, ans.Question, ans.Choice)
		}
		for j, m := range ans.Marks {
			answers[i].Marks[j].Reason = keyOf(t, q, a, ans.Question, m.Reason)
		}
	}
	if err := q.GradeAttempt(a, answers, i18n.English, time.Now()); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExplainRevealed: with the policy's leave, every question is
// explained, and the questions answered show their right answers.
func TestExplainRevealed(t *testing.T) {
	q := watchQuiz(t)
	a := graded(t, q, []quiz.Answer{{Question: "etcd-raw", Choice: "encrypted-default"}, {Question: "gone-410", Choice: "compacted-relist"}})
	e := q.Explain(a, i18n.Thai, true)
	if e.ScoreGiven != 1 || e.ScoreMaximum != 5 || len(e.Questions) != 5 || !e.Revealed {
		t.Fatalf("explained: %+v", e)
	}
	view := q.View(a, i18n.Thai)
	for i, eq := range e.Questions {
		qu := q.Questions[i]
		if eq.Explanation != qu.Explanation.TH || eq.Proof == nil || eq.Proof.Href != qu.Proof.Href || eq.Proof.Label != qu.Proof.Label.TH {
			t.Errorf("%s: explanation or proof not in Thai: %+v", qu.ID, eq)
		}
		rights := 0
		for j, o := range eq.Options {
			if o.ID != view.Questions[i].Options[j].ID {
				t.Errorf("%s: options not in the attempt's order", qu.ID)
			}
			if o.Right {
				rights++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[eq.Answered]; rights != want {
			t.Errorf("%s (answered %v): %d options marked right, want %d", qu.ID, eq.Answered, rights, want)
		}
	}
	raw := e.Questions[slices.IndexFunc(e.Questions, func(x quiz.ExplainedQuestion) bool { return x.ID == "etcd-raw" })]
	if raw.Correct || !raw.Answered || !slices.ContainsFunc(raw.Options, func(o quiz.ExplainedOption) bool { return o.Chosen && !o.Right }) {
		t.Errorf("etcd-raw: %+v", raw)
	}

	spot, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	sa := graded(t, spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 2, Reason: "polling"}, {Line: 4, Reason: "etcd-direct"}}}})
	es := spot.Explain(sa, i18n.English, true).Questions[0]
	if es.ScoreGiven != 0 || len(es.Lines) != 8 || len(es.Lines[3].Marks) != 1 || !es.Lines[3].Marks[0].Right || len(es.Lines[1].Marks) != 1 || es.Lines[1].Marks[0].Right ||
		es.Lines[1].Marks[0].Reason != keyOf(t, spot, sa, "wait-for-pod-ready", "polling") || !es.Lines[5].Buggy || es.Lines[0].Buggy || es.BugsFound != 1 {
		t.Errorf("spot-the-bug lines: %+v", es.Lines)
	}
	if len(es.Bugs) != 4 || !es.Bugs[0].Found || es.Bugs[1].Found || es.Bugs[1].Proof.Href != "/lesson/resource-version#watch" {
		t.Errorf("spot-the-bug bugs: %+v", es.Bugs)
	}
}

// TestExplainTwoBugsOnALine: line 3 is both the poll and the missing
// timeout; each mark on it shows with its own reason and verdict.
func TestExplainTwoBugsOnALine(t *testing.T) {
	spot, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	sa := graded(t, spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 3, Reason: "polling"}, {Line: 3, Reason: "no-timeout"}, {Line: 3, Reason: "interval"}}}})
	if sa.Result.ScoreGiven != 1 {
		t.Fatalf("two bugs and a wrong mark on line 3 score %d, want 1", sa.Result.ScoreGiven)
	}
	es := spot.Explain(sa, i18n.English, true).Questions[0]
	var right []bool
	for _, m := range es.Lines[2].Marks {
		right = append(right, m.Right)
	}
	if es.BugsFound != 2 || !slices.Equal(right, []bool{true, true, false}) {
		t.Errorf("line 3 explained: %+v, %d found", es.Lines[2], es.BugsFound)
	}
	if got := slices.IndexFunc(es.Bugs, func(b quiz.ExplainedBug) bool { return b.Found && b.ID == "loops-forever" }); got < 0 {
		t.Errorf("the missing timeout is not found beside the poll: %+v", es.Bugs)
	}
}

// TestExplainWithholds: a blank submission used to come back with every
// right option marked; now an unanswered question never shows its key,
// and before the reveal nothing is explained and no missed answer shown.
func TestExplainWithholds(t *testing.T) {
	for _, q := range quiz.Lesson().Quizzes() {
		blank := graded(t, q, nil)
		for _, reveal := range []bool{false, true} {
			for _, eq := range q.Explain(blank, i18n.English, reveal).Questions {
				if slices.ContainsFunc(eq.Options, func(o quiz.ExplainedOption) bool { return o.Right }) || len(eq.Bugs) > 0 ||
					slices.ContainsFunc(eq.Lines, func(l quiz.ExplainedLine) bool { return l.Buggy }) {
					t.Errorf("%s/%s (reveal %v): a blank answer shows the key: %+v", q.ID, eq.ID, reveal, eq)
				}
				if (eq.Explanation != "") != reveal {
					t.Errorf("%s/%s (reveal %v): explanation %q", q.ID, eq.ID, reveal, eq.Explanation)
				}
			}
		}
	}
	q := watchQuiz(t)
	wrong := graded(t, q, []quiz.Answer{{Question: "etcd-raw", Choice: "encrypted-default"}, {Question: "gone-410", Choice: "compacted-relist"}})
	for _, eq := range q.Explain(wrong, i18n.English, false).Questions {
		for _, o := range eq.Options {
			if o.Right && !(o.Chosen && eq.Correct) {
				t.Errorf("%s: before the reveal, option %s is marked right", eq.ID, o.Text)
			}
		}
		if eq.Explanation != "" || eq.Proof != nil {
			t.Errorf("%s: explained before the reveal", eq.ID)
		}
	}
	spot, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	sa := graded(t, spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 4, Reason: "etcd-direct"}}}})
	es := spot.Explain(sa, i18n.English, false).Questions[0]
	if len(es.Bugs) != 0 || es.BugsFound != 1 || es.ScoreMaximum != 4 || slices.ContainsFunc(es.Lines, func(l quiz.ExplainedLine) bool { return l.Buggy }) {
		t.Errorf("spot-the-bug before the reveal shows more than how many bugs were found: %+v", es)
	}
	// Two marks, one right: before the reveal, which one is not said.
	sa = graded(t, spot, []quiz.Answer{{Question: "wait-for-pod-ready", Marks: []quiz.Mark{{Line: 4, Reason: "etcd-direct"}, {Line: 6, Reason: "interval"}}}})
	es = spot.Explain(sa, i18n.English, false).Questions[0]
	for _, l := range es.Lines {
		for _, m := range l.Marks {
			if m.Right {
				t.Errorf("before the reveal, the mark on line %d is shown right", l.N)
			}
		}
	}
	if es.BugsFound != 1 || len(es.Lines[3].Marks) != 1 || len(es.Lines[5].Marks) != 1 || es.Lines[5].Marks[0].ReasonText == "" {
		t.Errorf("before the reveal, the student's own marks or the tally are missing: %+v", es)
	}
}

// TestRetiredOptionsStillShow: options replaced in the bank are never
// offered again, but an attempt that showed one, open or submitted, still
// shows it with the text it had, grades a choice of it as wrong, and an
// attempt from before attempts had ids of their own shows its choice.
func TestRetiredOptionsStillShow(t *testing.T) {
	q := watchQuiz(t)
	qu, _ := q.Question("etcd-raw")
	if len(qu.Retired) == 0 {
		t.Fatal("etcd-raw has no retired options")
	}
	old := qu.Retired[0]
	fresh := q.NewAttempt("alice", "", time.Now())
	for _, v := range q.View(fresh, i18n.English).Questions {
		for _, o := range v.Options {
			for _, qu := range q.Questions {
				if slices.ContainsFunc(qu.Retired, func(r quiz.Option) bool { return r.Text.EN == o.Text }) {
					t.Errorf("a new attempt offers the retired %q", o.Text)
				}
			}
		}
	}

	// Issued before the bank changed: its order names the retired option.
	issued := q.NewAttempt("alice", "", time.Now())
	for i := range issued.Options {
		if issued.Options[i].Question == "etcd-raw" {
			issued.Options[i].Options[0].Option = old.ID
		}
	}
	v := q.View(issued, i18n.Thai)
	shown := v.Questions[slices.IndexFunc(v.Questions, func(x quiz.QuestionView) bool { return x.ID == "etcd-raw" })].Options[0]
	if shown.Text != old.Text.TH {
		t.Fatalf("the open attempt shows %q, not the option it was issued with", shown.Text)
	}
	if err := q.GradeAttempt(issued, []quiz.Answer{{Question: "etcd-raw", Choice: shown.ID}}, i18n.Thai, time.Now()); err != nil || issued.Result.ScoreGiven != 0 {
		t.Fatalf("choosing the retired option: %v, score %d", err, issued.Result.ScoreGiven)
	}
	explained := func(a *quiz.Attempt) quiz.ExplainedOption {
		t.Helper()
		e := q.Explain(a, i18n.English, true)
		eq := e.Questions[slices.IndexFunc(e.Questions, func(x quiz.ExplainedQuestion) bool { return x.ID == "etcd-raw" })]
		i := slices.IndexFunc(eq.Options, func(o quiz.ExplainedOption) bool { return o.Chosen })
		if i < 0 || eq.Correct {
			t.Fatalf("explained: %+v", eq)
		}
		return eq.Options[i]
	}
	if o := explained(issued); o.Text != old.Text.EN || o.Right {
		t.Errorf("the submitted attempt shows its choice as %+v", o)
	}

	// Stored before attempts had ids: the bank's ids, and its choice.
	legacy := &quiz.Attempt{ID: "legacy", Quiz: q.ID, Student: "alice", Answers: []quiz.Answer{{Question: "etcd-raw", Choice: old.ID}}, Submitted: time.Now()}
	r, err := q.Grade(legacy.Answers)
	if err != nil {
		t.Fatal(err)
	}
	legacy.Result = r
	if o := explained(legacy); o.Text != old.Text.EN || o.ID != old.ID {
		t.Errorf("the legacy attempt shows its choice as %+v", o)
	}
}
