package quiz

import (
	"context"
	"errors"
	"time"
)

// Attempt is one graded submission of a quiz by a student.
type Attempt struct {
	ID      string `json:"id"`
	Quiz    string `json:"quiz"`
	Student string `json:"student"`
	// Class is the student's class, if they belong to one.
	Class string `json:"class,omitempty"`
	// Lang is the language the attempt was taken in.
	Lang      Lang      `json:"lang"`
	Answers   []Answer  `json:"answers"`
	Result    Result    `json:"result"`
	Submitted time.Time `json:"submitted"`
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
	// ErrAttemptExists: an attempt with this id was already submitted.
	ErrAttemptExists = errors.New("this attempt has already been submitted")
	// ErrAttemptNotFound: no such attempt.
	ErrAttemptNotFound = errors.New("attempt not found")
)

// Store keeps attempts. Implementations keep them outside the process, so
// that they survive restarts and replicas share them.
type Store interface {
	// Create stores a new attempt, or returns ErrAttemptExists.
	Create(ctx context.Context, a *Attempt) error
	// Get returns a student's attempt, or ErrAttemptNotFound.
	Get(ctx context.Context, student, quiz, id string) (*Attempt, error)
	// List returns the attempts f matches, by student name, then oldest
	// first.
	List(ctx context.Context, f Filter) ([]*Attempt, error)
}
