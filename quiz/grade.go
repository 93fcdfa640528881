package quiz

import (
	"fmt"
	"slices"
	"strings"
)

// Submission is a set of answers to one quiz.
type Submission struct {
	Quiz    string   `json:"quiz"`
	Answers []Answer `json:"answers"`
}

// Answer answers one question: Choice names an option of a Choice
// question; Marks mark lines of a SpotTheBug question.
type Answer struct {
	Question string `json:"question"`
	Choice   string `json:"choice,omitempty"`
	Marks    []Mark `json:"marks,omitempty"`
}

// Mark says that a line (1-based) is wrong, for the reason with that id. A
// line wrong for two reasons takes two marks.
type Mark struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Problem is one thing wrong with a submission, at a field path such as
// answers[2].choice.
type Problem struct {
	Field string
	// Value is the offending value, if there is one.
	Value any
	// Type is one of the Problem* constants.
	Type   string
	Detail string
}

// The kinds of Problem.
const (
	ProblemNotFound  = "NotFound"
	ProblemDuplicate = "Duplicate"
	ProblemInvalid   = "Invalid"
	ProblemRequired  = "Required"
)

// InvalidError lists what is wrong with a submission. Nothing of an
// invalid submission is graded or stored.
type InvalidError struct {
	Quiz     string
	Problems []Problem
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Detail
	}
	return fmt.Sprintf("invalid answers to quiz %q: %s", e.Quiz, strings.Join(parts, "; "))
}

// Validate checks answers against the quiz: every question and option id
// must exist, no question may be answered twice, no line marked twice with
// the same reason, and every answer must be of its question's kind. A line
// may carry several marks, each with its own reason: one line can hold more
// than one bug.
func (q *Quiz) Validate(answers []Answer) error {
	var probs []Problem
	add := func(field string, value any, typ, detail string) {
		probs = append(probs, Problem{Field: field, Value: value, Type: typ, Detail: detail})
	}
	seen := map[string]bool{}
	for i, a := range answers {
		f := fmt.Sprintf("answers[%d]", i)
		qu, ok := q.Question(a.Question)
		switch {
		case a.Question == "":
			add(f+".question", nil, ProblemRequired, "name the question this answers")
			continue
		case !ok:
			add(f+".question", a.Question, ProblemNotFound, fmt.Sprintf("quiz %q has no question %q", q.ID, a.Question))
			continue
		case seen[a.Question]:
			add(f+".question", a.Question, ProblemDuplicate, "this question is answered more than once")
			continue
		}
		seen[a.Question] = true
		if qu.Kind == Choice {
			probs = append(probs, validateChoice(f, qu, a)...)
		} else {
			probs = append(probs, validateMarks(f, qu, a)...)
		}
	}
	if len(probs) > 0 {
		return &InvalidError{Quiz: q.ID, Problems: probs}
	}
	return nil
}

func validateChoice(f string, qu *Question, a Answer) []Problem {
	var probs []Problem
	if len(a.Marks) > 0 {
		probs = append(probs, Problem{Field: f + ".marks", Type: ProblemInvalid, Detail: "question " + qu.ID + " is answered with a choice, not marks"})
	}
	if _, ok := qu.Option(a.Choice); !ok {
		detail := "question " + qu.ID + " offers " + offered(qu)
		typ := ProblemNotFound
		if a.Choice == "" {
			typ, detail = ProblemRequired, "pick one of question "+qu.ID+"'s options"
		}
		probs = append(probs, Problem{Field: f + ".choice", Value: a.Choice, Type: typ, Detail: detail})
	}
	return probs
}

func validateMarks(f string, qu *Question, a Answer) []Problem {
	var probs []Problem
	if a.Choice != "" {
		probs = append(probs, Problem{Field: f + ".choice", Value: a.Choice, Type: ProblemInvalid, Detail: "question " + qu.ID + " is answered with marks, not a choice"})
	}
	lines := len(SnippetLines(qu.Snippet))
	marked := map[Mark]bool{}
	for j, m := range a.Marks {
		mf := fmt.Sprintf("%s.marks[%d]", f, j)
		switch {
		case m.Line < 1 || m.Line > lines:
			probs = append(probs, Problem{Field: mf + ".line", Value: m.Line, Type: ProblemInvalid, Detail: fmt.Sprintf("the code has lines 1 to %d", lines)})
		case marked[m]:
			probs = append(probs, Problem{Field: mf + ".line", Value: m.Line, Type: ProblemDuplicate, Detail: "this line is marked with this reason more than once"})
		}
		marked[m] = true
		if _, ok := qu.Option(m.Reason); !ok {
			probs = append(probs, Problem{Field: mf + ".reason", Value: m.Reason, Type: ProblemNotFound, Detail: "question " + qu.ID + " offers the reasons " + offered(qu)})
		}
	}
	return probs
}

// offered lists a question's option ids in alphabetical order: the bank's
// own order could tell the right one.
func offered(qu *Question) string {
	ids := make([]string, len(qu.Options))
	for i, o := range qu.Options {
		ids[i] = o.ID
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// Result is a graded submission: the score in the shape of an LTI score,
// and each question's.
type Result struct {
	Quiz         string           `json:"quiz"`
	ScoreGiven   int              `json:"scoreGiven"`
	ScoreMaximum int              `json:"scoreMaximum"`
	Questions    []QuestionResult `json:"questions"`
}

// QuestionResult is how one question was answered and scored.
type QuestionResult struct {
	Question     string `json:"question"`
	Answered     bool   `json:"answered"`
	Correct      bool   `json:"correct"`
	ScoreGiven   int    `json:"scoreGiven"`
	ScoreMaximum int    `json:"scoreMaximum"`
	// Choice is the option picked, for a Choice question.
	Choice string `json:"choice,omitempty"`
	// Marks are the lines marked, for a SpotTheBug question, each with the
	// bug it found (empty for a wrong mark).
	Marks []MarkResult `json:"marks,omitempty"`
	// Bugs says which of a SpotTheBug question's bugs were found.
	Bugs []BugResult `json:"bugs,omitempty"`
}

// MarkResult is a mark and the bug it found, if any.
type MarkResult struct {
	Mark
	Bug string `json:"bug,omitempty"`
}

// BugResult says whether a bug was found.
type BugResult struct {
	Bug   string `json:"bug"`
	Found bool   `json:"found"`
}

// Grade validates answers and grades them. A question left unanswered
// scores 0.
func (q *Quiz) Grade(answers []Answer) (Result, error) {
	if err := q.Validate(answers); err != nil {
		return Result{}, err
	}
	byQuestion := map[string]Answer{}
	for _, a := range answers {
		byQuestion[a.Question] = a
	}
	r := Result{Quiz: q.ID, ScoreMaximum: q.Max()}
	for i := range q.Questions {
		qu := &q.Questions[i]
		a, answered := byQuestion[qu.ID]
		qr := QuestionResult{Question: qu.ID, ScoreMaximum: qu.Max()}
		if qu.Kind == Choice {
			qr.Answered = answered && a.Choice != ""
			qr.Choice = a.Choice
			if a.Choice == qu.Answer {
				qr.ScoreGiven = 1
			}
		} else {
			qr.Answered = answered && len(a.Marks) > 0
			gradeMarks(qu, a.Marks, &qr)
		}
		qr.Correct = qr.ScoreGiven == qr.ScoreMaximum
		r.ScoreGiven += qr.ScoreGiven
		r.Questions = append(r.Questions, qr)
	}
	return r, nil
}

// gradeMarks gives a point per bug found, and takes one away per wrong
// mark, so marking every line with every reason cannot score.
func gradeMarks(qu *Question, marks []Mark, qr *QuestionResult) {
	found := map[string]bool{}
	wrong := 0
	for _, m := range marks {
		mr := MarkResult{Mark: m}
		for _, b := range qu.Bugs {
			if b.Reason == m.Reason && slices.Contains(b.Lines, m.Line) {
				mr.Bug = b.ID
				found[b.ID] = true
				break
			}
		}
		if mr.Bug == "" {
			wrong++
		}
		qr.Marks = append(qr.Marks, mr)
	}
	for _, b := range qu.Bugs {
		qr.Bugs = append(qr.Bugs, BugResult{Bug: b.ID, Found: found[b.ID]})
	}
	qr.ScoreGiven = max(0, len(found)-wrong)
}
