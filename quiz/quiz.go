// Package quiz is the lesson's question bank (multiple choice and
// spot-the-bug, in English and Thai), the view of a quiz a student may see
// before submitting (options shuffled per attempt, no answers), grading by
// option and reason ids, and the attempts a student submits.
//
// The bank itself is never encoded: what a student sees before submitting
// is a View, a type of its own with no field for an answer or an
// explanation, and a Result, which has them, exists only once an attempt
// has been graded.
package quiz

import (
	"fmt"

	"github.com/kubelab/kubelab/web/i18n"
)

// Kind says how a question is answered.
type Kind string

// The kinds of question.
const (
	// Choice is answered by picking one option.
	Choice Kind = "choice"
	// SpotTheBug is answered by marking lines of code, each with a reason.
	SpotTheBug Kind = "spot-the-bug"
)

// Option is one answer to a Choice question, or one reason a line of a
// SpotTheBug snippet may be wrong. Its ID is what a submission names.
type Option struct {
	ID   string
	Text i18n.Text
}

// Bug is one bug in a SpotTheBug snippet: found by marking any of Lines
// (1-based) with Reason.
type Bug struct {
	ID          string
	Lines       []int
	Reason      string
	Explanation i18n.Text
	Proof       Proof
}

// Proof links to the place in the lesson that proves an answer live.
type Proof struct {
	// Href is a lesson page anchor such as /lesson#watch.
	Href  string
	Label i18n.Text
}

// Question is one question of a quiz, answers included: only the grader
// and results read Answer, Bugs and Explanation.
type Question struct {
	ID     string
	Kind   Kind
	Prompt i18n.Text
	// Snippet is shown with the prompt: a command's output for a Choice
	// question, the code to review for SpotTheBug (one line per line).
	Snippet string
	// Options are the choices, or for SpotTheBug the reasons offered.
	Options []Option
	// Retired are options the question offered once and no longer does,
	// with the text they had: an attempt issued or answered before they
	// were replaced still shows them as it did, and a choice of one grades
	// as wrong. A new attempt never offers them.
	Retired []Option
	// Answer is the correct option of a Choice question.
	Answer string
	// Bugs are the bugs of a SpotTheBug question; each is worth a point.
	Bugs        []Bug
	Explanation i18n.Text
	Proof       Proof
}

// Max is the most a question can score: 1, or one per bug.
func (q *Question) Max() int {
	if q.Kind == SpotTheBug {
		return len(q.Bugs)
	}
	return 1
}

// Option returns the option with id, offered or retired, if the question
// has one.
func (q *Question) Option(id string) (Option, bool) {
	for _, o := range q.Options {
		if o.ID == id {
			return o, true
		}
	}
	for _, o := range q.Retired {
		if o.ID == id {
			return o, true
		}
	}
	return Option{}, false
}

// Quiz is a titled list of questions.
type Quiz struct {
	ID        string
	Title     i18n.Text
	Intro     i18n.Text
	Questions []Question
}

// Max is the quiz's highest possible score.
func (q *Quiz) Max() int {
	n := 0
	for i := range q.Questions {
		n += q.Questions[i].Max()
	}
	return n
}

// Question returns the question with id, if the quiz has one.
func (q *Quiz) Question(id string) (*Question, bool) {
	for i := range q.Questions {
		if q.Questions[i].ID == id {
			return &q.Questions[i], true
		}
	}
	return nil, false
}

// Bank is a set of quizzes, in the order they are offered.
type Bank struct {
	quizzes []*Quiz
}

// NewBank checks quizzes for mistakes a grader would trip on (duplicate
// ids, an answer that is not an option, a bug on a line that does not
// exist) and returns them as a bank.
func NewBank(quizzes ...*Quiz) (*Bank, error) {
	seen := map[string]bool{}
	for _, q := range quizzes {
		if q.ID == "" || seen[q.ID] {
			return nil, fmt.Errorf("quiz %q: empty or duplicate id", q.ID)
		}
		seen[q.ID] = true
		if err := check(q); err != nil {
			return nil, fmt.Errorf("quiz %q: %w", q.ID, err)
		}
	}
	return &Bank{quizzes: quizzes}, nil
}

func check(q *Quiz) error {
	ids := map[string]bool{}
	for i := range q.Questions {
		qu := &q.Questions[i]
		if qu.ID == "" || ids[qu.ID] {
			return fmt.Errorf("question %q: empty or duplicate id", qu.ID)
		}
		ids[qu.ID] = true
		opts := map[string]bool{}
		for _, o := range qu.Options {
			if o.ID == "" || opts[o.ID] {
				return fmt.Errorf("question %q: option %q: empty or duplicate id", qu.ID, o.ID)
			}
			opts[o.ID] = true
		}
		for _, o := range qu.Retired {
			if o.ID == "" || opts[o.ID] || o.ID == qu.Answer {
				return fmt.Errorf("question %q: retired option %q: empty, duplicate or the answer", qu.ID, o.ID)
			}
			opts[o.ID] = true
		}
		switch qu.Kind {
		case Choice:
			if !opts[qu.Answer] {
				return fmt.Errorf("question %q: answer %q is not an option", qu.ID, qu.Answer)
			}
		case SpotTheBug:
			n := len(SnippetLines(qu.Snippet))
			if len(qu.Bugs) == 0 {
				return fmt.Errorf("question %q: no bugs", qu.ID)
			}
			for _, b := range qu.Bugs {
				if !opts[b.Reason] {
					return fmt.Errorf("question %q: bug %q: reason %q is not offered", qu.ID, b.ID, b.Reason)
				}
				for _, l := range b.Lines {
					if l < 1 || l > n {
						return fmt.Errorf("question %q: bug %q: line %d is not in the snippet", qu.ID, b.ID, l)
					}
				}
			}
		default:
			return fmt.Errorf("question %q: unknown kind %q", qu.ID, qu.Kind)
		}
	}
	return nil
}

// Quizzes returns the bank's quizzes in order.
func (b *Bank) Quizzes() []*Quiz { return b.quizzes }

// Quiz returns the quiz with id, if the bank has one.
func (b *Bank) Quiz(id string) (*Quiz, bool) {
	for _, q := range b.quizzes {
		if q.ID == id {
			return q, true
		}
	}
	return nil, false
}
