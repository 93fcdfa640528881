package quiz

import "fmt"

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
	// RevealNever only ever shows scores and what was answered.
	RevealNever Reveal = "never"
)

// ParseReveal reads a reveal policy by name.
func ParseReveal(s string) (Reveal, error) {
	switch r := Reveal(s); r {
	case RevealAfterSubmit, RevealAfterLastAttempt, RevealNever:
		return r, nil
	}
	return "", fmt.Errorf("unknown reveal policy %q: want %s, %s or %s", s, RevealAfterSubmit, RevealAfterLastAttempt, RevealNever)
}

// Policy is what the instructor allows at each quiz.
type Policy struct {
	// Attempts is how many attempts a student may submit at each quiz;
	// 0 is no limit.
	Attempts int
	Reveal   Reveal
}

// Reveals reports whether a student who has submitted this many attempts
// at a quiz may see its answers and explanations.
func (p Policy) Reveals(submitted int) bool {
	switch p.Reveal {
	case RevealAfterSubmit:
		return true
	case RevealAfterLastAttempt:
		return p.Attempts > 0 && submitted >= p.Attempts
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
