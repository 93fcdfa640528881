package quizhttp_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestOnOneServer runs, side by side on one whole server (the quiz pages
// need its routes, sign-in and token authentication, not the API alone),
// the tests whose students are of a class of their own (see ownClass) and
// that read attempts only by that class or by their students' names:
// starting a server costs more than most of them. A test that reads every
// attempt, restarts the server, or runs with another classroom or
// attempts policy starts a server of its own.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	kubelabtest.RunShared(t, lab,
		kubelabtest.Shared{Name: "NothingGivenAwayBeforeSubmitting", Run: testNothingGivenAwayBeforeSubmitting},
		kubelabtest.Shared{Name: "AttemptPerStudent", Run: testAttemptPerStudent},
		kubelabtest.Shared{Name: "BrowserSession", Run: testBrowserSession},
		kubelabtest.Shared{Name: "SubmissionsPaced", Run: testSubmissionsPaced},
		kubelabtest.Shared{Name: "CSVDoesNotExportFormulas", Run: testCSVDoesNotExportFormulas},
		kubelabtest.Shared{Name: "BadSubmissions", Run: testBadSubmissions},
		kubelabtest.Shared{Name: "BadForms", Run: testBadForms},
		kubelabtest.Shared{Name: "StudentsSeeOnlyTheirOwn", Run: testStudentsSeeOnlyTheirOwn},
	)
}

// TestOnOneRevealingServer does the same on a server that explains every
// attempt, for the tests of what the explanations show.
func TestOnOneRevealingServer(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, revealing)
	kubelabtest.RunShared(t, lab,
		kubelabtest.Shared{Name: "TakeQuizInThai", Run: testTakeQuizInThai},
		kubelabtest.Shared{Name: "SpotTheBugForm", Run: testSpotTheBugForm},
		kubelabtest.Shared{Name: "BrowserAnswerAfterSubmitting", Run: testBrowserAnswerAfterSubmitting},
	)
}

// TestOnOneGradersServer runs side by side the tests of the grader's
// doors that take no quiz: two of them count every attempt on the server
// and want none, so no test that takes a quiz may share it.
func TestOnOneGradersServer(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	kubelabtest.RunShared(t, lab,
		kubelabtest.Shared{Name: "GraderAuth", Run: testGraderAuth},
		kubelabtest.Shared{Name: "GraderRefusesStudentsInTheGraderGroup", Run: testGraderRefusesStudentsInTheGraderGroup},
		kubelabtest.Shared{Name: "GradeStoresNothing", Run: testGradeStoresNothing},
		kubelabtest.Shared{Name: "BadGrades", Run: testBadGrades},
	)
}
