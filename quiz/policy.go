package quiz

import (
	"fmt"
	"time"
)

// Reveal says when a student sees the right answers and explanations of
// the questions they answered.
type Reveal string

// The reveal policies an instructor may choose.
const (
	// RevealAfterSubmit explains every attempt as soon as it is graded.
	RevealAfterSubmit Reveal = "after-submit"
	// RevealAfterLastAttempt explains a student's attempts once they have
	// no attempt left, so an early attempt cannot harvest the key for a
	// later one. With no limit on attempts there is no last one, and so no
	// reveal.
	RevealAfterLastAttempt Reveal = "after-last-attempt"
	// RevealAfterClose explains every attempt at a quiz once it is
	// closed, by the instructor or at the policy's deadline. Until then no
	// account sees an answer, so a throwaway account that uses up its
	// attempts harvests nothing for another. The default in a class.
	RevealAfterClose Reveal = "after-close"
	// RevealNever only ever shows scores and what was answered.
	RevealNever Reveal = "never"
)

// ParseReveal reads a reveal policy by name.
func ParseReveal(s string) (Reveal, error) {
	switch r := Reveal(s); r {
	case RevealAfterSubmit, RevealAfterLastAttempt, RevealAfterClose, RevealNever:
		return r, nil
	}
	return "", fmt.Errorf("unknown reveal policy %q: want %s, %s, %s or %s", s, RevealAfterSubmit, RevealAfterLastAttempt, RevealAfterClose, RevealNever)
}

// Policy is what the instructor allows at each quiz.
type Policy struct {
	// Attempts is how many attempts a student may submit at each quiz;
	// 0 is no limit.
	Attempts int
	Reveal   Reveal
	// ClosesAt, if set, is when every quiz closes by itself: no attempt
	// is taken after it, and RevealAfterClose then explains them.
	ClosesAt time.Time
}

// Reveals reports whether a student who has submitted this many attempts
// at a quiz may see its answers and explanations, the quiz being closed
// or not. A closed quiz takes no more attempts, so every policy but
// RevealNever explains it.
func (p Policy) Reveals(submitted int, closed bool) bool {
	switch p.Reveal {
	case RevealAfterSubmit:
		return true
	case RevealAfterLastAttempt:
		return closed || p.Attempts > 0 && submitted >= p.Attempts
	case RevealAfterClose:
		return closed
	}
	return false
}

// AttemptsLeft is how many more attempts a student who has submitted this
// many may take, or -1 for no limit.
func (p Policy) AttemptsLeft(submitted int) int {
	if p.Attempts == 0 {
		return -1
	}
	return max(0, p.Attempts-submitted)
}
