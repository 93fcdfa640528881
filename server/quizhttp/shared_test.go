package quizhttp_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/sidebyside"
)

// TestOnOneServer runs, side by side on one API with the quizzes on it
// (startQuiz: the quiz pages need the request pipeline's users, not a
// whole kubelab), the tests whose students are of a class of their own
// (see ownClass) and that read attempts only by that class or by their
// students' names: starting a server costs more than most of them. A
// test that reads every attempt, restarts the server, or runs with
// another classroom or attempts policy starts a server of its own.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	var lab served = startQuiz(t, policyOf())
	sidebyside.Run(t, lab, map[string]func(*testing.T, served){
		"NothingGivenAwayBeforeSubmitting": testNothingGivenAwayBeforeSubmitting,
		"AttemptPerStudent":                testAttemptPerStudent,
		"BrowserSession":                   testBrowserSession,
		"SubmissionsPaced":                 testSubmissionsPaced,
		"CSVDoesNotExportFormulas":         testCSVDoesNotExportFormulas,
		"UnknownClassIsNotFound":           testUnknownClassIsNotFound,
		"BadSubmissions":                   testBadSubmissions,
		"BadForms":                         testBadForms,
		"StudentsSeeOnlyTheirOwn":          testStudentsSeeOnlyTheirOwn,
	})
}

// TestOnOneRevealingServer does the same under a policy that explains
// every attempt, for the tests of what the explanations show.
func TestOnOneRevealingServer(t *testing.T) {
	t.Parallel()
	var lab served = startQuiz(t, policyOf(revealing))
	sidebyside.Run(t, lab, map[string]func(*testing.T, served){
		"TakeQuizInThai": testTakeQuizInThai,
		"SpotTheBugForm": testSpotTheBugForm,
	})
}

// TestOnOneGradersServer runs side by side the tests of the grader's
// doors that take no quiz: two of them count every attempt on the server
// and want none, so no test that takes a quiz may share it.
func TestOnOneGradersServer(t *testing.T) {
	t.Parallel()
	var lab served = startQuiz(t, policyOf())
	sidebyside.Run(t, lab, map[string]func(*testing.T, served){
		"GraderAuth":                            testGraderAuth,
		"GraderRefusesStudentsInTheGraderGroup": testGraderRefusesStudentsInTheGraderGroup,
		"GradeStoresNothing":                    testGradeStoresNothing,
		"BadGrades":                             testBadGrades,
	})
}
