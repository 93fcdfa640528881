package quizhttp_test

import "testing"

// TestOnOneServer runs, side by side on one API with the quizzes on it
// (startQuiz: the quiz pages need the request pipeline's users, not a
// whole kubelab), the tests whose students are of a class of their own
// (see ownClass) and that read attempts only by that class or by their
// students' names: starting a server costs more than most of them. A
// test that reads every attempt, restarts the server, or runs with
// another classroom or attempts policy starts a server of its own.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	lab := startQuiz(t, policyOf())
	runShared(t, lab,
		shared{"NothingGivenAwayBeforeSubmitting", testNothingGivenAwayBeforeSubmitting},
		shared{"AttemptPerStudent", testAttemptPerStudent},
		shared{"BrowserSession", testBrowserSession},
		shared{"SubmissionsPaced", testSubmissionsPaced},
		shared{"CSVDoesNotExportFormulas", testCSVDoesNotExportFormulas},
		shared{"BadSubmissions", testBadSubmissions},
		shared{"BadForms", testBadForms},
		shared{"StudentsSeeOnlyTheirOwn", testStudentsSeeOnlyTheirOwn},
	)
}

// TestOnOneRevealingServer does the same under a policy that explains
// every attempt, for the tests of what the explanations show.
func TestOnOneRevealingServer(t *testing.T) {
	t.Parallel()
	lab := startQuiz(t, policyOf(revealing))
	runShared(t, lab,
		shared{"TakeQuizInThai", testTakeQuizInThai},
		shared{"SpotTheBugForm", testSpotTheBugForm},
	)
}

// TestOnOneGradersServer runs side by side the tests of the grader's
// doors that take no quiz: two of them count every attempt on the server
// and want none, so no test that takes a quiz may share it.
func TestOnOneGradersServer(t *testing.T) {
	t.Parallel()
	lab := startQuiz(t, policyOf())
	runShared(t, lab,
		shared{"GraderAuth", testGraderAuth},
		shared{"GraderRefusesStudentsInTheGraderGroup", testGraderRefusesStudentsInTheGraderGroup},
		shared{"GradeStoresNothing", testGradeStoresNothing},
		shared{"BadGrades", testBadGrades},
	)
}
