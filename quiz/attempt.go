package quiz

import (
	"context"
	"errors"
	"time"

	"github.com/kubelab/kubelab/web/i18n"
)

// Attempt is one attempt at a quiz by a student. The server issues it when
// the student opens the quiz (id, number, issue time, and the attempt's own
// option ids and order), and the student submits it once.
type Attempt struct {
	ID      string `json:"id"`
	Quiz    string `json:"quiz"`
	Student string `json:"student"`
	// Class is the student's class, if they belong to one.
	Class string `json:"class,omitempty"`
	// Number is the attempt's place among the student's attempts at the
	// quiz, from 1, in the order the server issued them.
	Number int       `json:"number"`
	Issued time.Time `json:"issued"`
	// Options are each question's options as this attempt shows them.
	Options []QuestionOptions `json:"options,omitempty"`
	// Lang is the language the attempt was submitted in.
	Lang i18n.Lang `json:"lang"`
	// Answers are the answers submitted, in the bank's option ids.
	Answers []Answer `json:"answers"`
	Result  Result   `json:"result"`
	// Submitted is zero while the attempt is open.
	Submitted time.Time `json:"submitted"`
}

// Open reports whether the attempt has not been submitted yet.
func (a *Attempt) Open() bool { return a.Submitted.IsZero() }

// QuestionOptions are one question's options in an attempt's order.
type QuestionOptions struct {
	Question string      `json:"question"`
	Options  []OptionKey `json:"options"`
}

// OptionKey pairs the id an attempt shows for an option with the bank's.
type OptionKey struct {
	// ID is random per attempt: a key learnt in one attempt, or from
	// another student, names nothing in the next.
	ID     string `json:"id"`
	Option string `json:"option"`
}

// Filter selects attempts; an empty field matches everything.
type Filter struct {
	Class   string
	Student string
	Quiz    string
}

// Matches reports whether a passes the filter.
func (f Filter) Matches(a *Attempt) bool {
	return (f.Class == "" || f.Class == a.Class) &&
		(f.Student == "" || f.Student == a.Student) &&
		(f.Quiz == "" || f.Quiz == a.Quiz)
}

// Errors a Store returns.
var (
	// ErrAttemptSubmitted: the attempt was already submitted.
	ErrAttemptSubmitted = errors.New("this attempt has already been submitted")
	// ErrAttemptNotFound: no such attempt was issued to this student for
	// this quiz.
	ErrAttemptNotFound = errors.New("attempt not found")
	// ErrNoAttemptsLeft: the student has submitted as many attempts at
	// the quiz as the instructor allows.
	ErrNoAttemptsLeft = errors.New("no attempts left at this quiz")
)

// Store keeps attempts. Implementations keep them outside the process, so
// that they survive restarts and replicas share them, and guard each write
// against concurrent ones, so that a limit holds however many requests race.
type Store interface {
	// Issue returns the student's open attempt at a.Quiz if they have one,
	// else stores a as their next attempt, numbered. It returns
	// ErrNoAttemptsLeft once they have submitted limit attempts (0: no
	// limit).
	Issue(ctx context.Context, a *Attempt, limit int) (*Attempt, error)
	// Submit records a's answers, result, language and time on the open
	// attempt with a's id, once: ErrAttemptNotFound, ErrAttemptSubmitted,
	// or ErrNoAttemptsLeft if limit attempts are already submitted.
	Submit(ctx context.Context, a *Attempt, limit int) error
	// Get returns a student's attempt, open or submitted, or
	// ErrAttemptNotFound.
	Get(ctx context.Context, student, quiz, id string) (*Attempt, error)
	// List returns the submitted attempts f matches, by student, quiz,
	// then number.
	List(ctx context.Context, f Filter) ([]*Attempt, error)
	// Close closes a quiz at at, for every student, once: closing it
	// again keeps the first time, which it returns.
	Close(ctx context.Context, quiz string, at time.Time) (time.Time, error)
	// ClosedAt is when the quiz was closed, or the zero time.
	ClosedAt(ctx context.Context, quiz string) (time.Time, error)
}
