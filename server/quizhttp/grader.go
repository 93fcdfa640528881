package quizhttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/quiz"
)

// GraderPath is the grader endpoint's root.
const GraderPath = "/kubelab/v1/grader"

// APIVersion is the apiVersion of the quiz's JSON documents.
const APIVersion = "kubelab.io/v1"

// Score is one graded attempt in the shape of an LTI 1.3 (Assignment and
// Grade Services) score, plus who, which quiz, and each question's result,
// so a bridge to an LMS only has to forward it.
type Score struct {
	AttemptID string `json:"attemptId"`
	// Number is the attempt's place among the student's attempts at the
	// quiz, in the order the server issued them; Issued is when.
	Number int    `json:"number"`
	Issued string `json:"issued"`
	// UserID is the student's user name, as LTI calls it.
	UserID  string `json:"userId"`
	Student string `json:"student"`
	// DisplayName is the name the student typed at sign-in, as typed (a
	// name in Thai script has the user name "student").
	DisplayName      string                `json:"displayName,omitempty"`
	Class            string                `json:"class,omitempty"`
	Quiz             string                `json:"quiz"`
	ScoreGiven       int                   `json:"scoreGiven"`
	ScoreMaximum     int                   `json:"scoreMaximum"`
	Timestamp        string                `json:"timestamp"`
	ActivityProgress string                `json:"activityProgress"`
	GradingProgress  string                `json:"gradingProgress"`
	Questions        []quiz.QuestionResult `json:"questions"`
}

// ScoreList is the answer to GET results: every attempt, by student, quiz
// and the order the server issued them in, and each student's first, last
// and best attempt at each quiz.
type ScoreList struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Items      []Score   `json:"items"`
	Summaries  []Summary `json:"summaries"`
}

// Summary is a student's attempts at one quiz: how many, and which were
// first, last and best (the highest score; the earliest of equals).
type Summary struct {
	Student     string     `json:"student"`
	DisplayName string     `json:"displayName,omitempty"`
	Class       string     `json:"class,omitempty"`
	Quiz        string     `json:"quiz"`
	Attempts    int        `json:"attempts"`
	First       AttemptRef `json:"first"`
	Last        AttemptRef `json:"last"`
	Best        AttemptRef `json:"best"`
}

// GradeResult is the answer to POST grade: the grade, nothing stored.
type GradeResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	quiz.Result
	GradingProgress string `json:"gradingProgress"`
}

// LTI's fixed values: a submitted attempt is complete and, being machine
// graded, fully graded.
const (
	ActivityCompleted = "Completed"
	FullyGraded       = "FullyGraded"
)

// timestamp is LTI's: RFC 3339 in UTC, to the millisecond.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func refOf(a *quiz.Attempt) AttemptRef {
	return AttemptRef{AttemptID: a.ID, Number: a.Number, Issued: timestamp(a.Issued), Timestamp: timestamp(a.Submitted),
		ScoreGiven: a.Result.ScoreGiven, ScoreMaximum: a.Result.ScoreMaximum}
}

// summarize sums up attempts, which List sorts by student, quiz and
// number.
func summarize(attempts []*quiz.Attempt, names map[string]string) []Summary {
	out := []Summary{}
	for i, a := range attempts {
		if i == 0 || a.Student != attempts[i-1].Student || a.Quiz != attempts[i-1].Quiz {
			out = append(out, Summary{Student: a.Student, DisplayName: names[a.Student], Class: a.Class, Quiz: a.Quiz, First: refOf(a), Best: refOf(a)})
		}
		s := &out[len(out)-1]
		s.Attempts++
		s.Last = refOf(a)
		if a.Result.ScoreGiven > s.Best.ScoreGiven {
			s.Best = refOf(a)
		}
	}
	return out
}

func scoreOf(a *quiz.Attempt, names map[string]string) Score {
	return Score{
		AttemptID: a.ID, Number: a.Number, Issued: timestamp(a.Issued), UserID: a.Student, Student: a.Student, DisplayName: names[a.Student],
		Class: a.Class, Quiz: a.Quiz,
		ScoreGiven: a.Result.ScoreGiven, ScoreMaximum: a.Result.ScoreMaximum,
		Timestamp:        timestamp(a.Submitted),
		ActivityProgress: ActivityCompleted, GradingProgress: FullyGraded,
		Questions: a.Result.Questions,
	}
}

func (h *handlers) routeGrader(e *echo.Echo) {
	g := e.Group(GraderPath, h.graderOnly)
	g.GET("/results", h.results)
	g.GET("/results.csv", h.resultsCSV)
	g.GET("/roster", h.rosterJSON)
	g.GET("/roster.csv", h.rosterCSV)
	g.POST("/grade", h.grade)
}

// graderOnly: no token is 401, a token of anyone who may not grade
// (students above all, whatever other groups they are in) is 403.
func (h *handlers) graderOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := userOf(c)
		r := c.Request()
		if u.IsAnonymous() {
			return errUnauthorized(r.URL.Path)
		}
		if !classroom.CanGrade(u) {
			return errForbidden(u, strings.ToLower(r.Method), r.URL.Path, "only instructors and graders read and grade quiz results")
		}
		return next(c)
	}
}

// filterOf reads ?class=, ?student= and ?quiz=; a quiz the bank does not
// have is an error rather than an empty list, to catch typos.
func (h *handlers) filterOf(c echo.Context) (quiz.Filter, error) {
	f := quiz.Filter{Class: c.QueryParam("class"), Student: c.QueryParam("student"), Quiz: c.QueryParam("quiz")}
	if f.Quiz != "" {
		if _, ok := h.bank.Quiz(f.Quiz); !ok {
			return f, errUnknownQuiz(f.Quiz)
		}
	}
	return f, nil
}

// attemptsOf lists the attempts the request's filter matches, with the
// display names of the students who made them.
func (h *handlers) attemptsOf(c echo.Context) (quiz.Filter, []*quiz.Attempt, map[string]string, error) {
	f, err := h.filterOf(c)
	if err != nil {
		return f, nil, nil, err
	}
	ctx := c.Request().Context()
	attempts, err := h.store.List(ctx, f)
	if err != nil {
		return f, nil, nil, err
	}
	if len(attempts) == 0 && f.Class != "" && f.Class != h.className {
		// A class that is not this kubelab's and has no attempt at all
		// is a typo, not an empty class.
		ever, err := h.store.List(ctx, quiz.Filter{Class: f.Class})
		if err != nil {
			return f, nil, nil, err
		}
		if len(ever) == 0 {
			return f, nil, nil, errUnknownClass(f.Class, h.className)
		}
	}
	names := map[string]string{}
	if h.displayNames != nil {
		if names, err = h.displayNames(ctx); err != nil {
			return f, nil, nil, err
		}
	}
	return f, attempts, names, nil
}

func (h *handlers) results(c echo.Context) error {
	_, attempts, names, err := h.attemptsOf(c)
	if err != nil {
		return err
	}
	list := ScoreList{APIVersion: APIVersion, Kind: "QuizScoreList", Items: []Score{}, Summaries: summarize(attempts, names)}
	for _, a := range attempts {
		list.Items = append(list.Items, scoreOf(a, names))
	}
	return c.JSON(http.StatusOK, list)
}

// resultsCSV writes one row per attempt and a column per question of the
// quizzes in the export, scored 0 or 1 (spot-the-bug: bugs found, net).
func (h *handlers) resultsCSV(c echo.Context) error {
	f, attempts, names, err := h.attemptsOf(c)
	if err != nil {
		return err
	}
	var cols []string
	for _, q := range h.bank.Quizzes() {
		if f.Quiz == "" || f.Quiz == q.ID {
			for _, qu := range q.Questions {
				cols = append(cols, q.ID+"/"+qu.ID)
			}
		}
	}
	w, err := h.csvWriter(c, "quiz-results")
	if err != nil {
		return err
	}
	w.Write(append([]string{"attempt", "student", "displayName", "class", "quiz", "number", "issued", "timestamp", "scoreGiven", "scoreMaximum"}, cols...))
	for _, a := range attempts {
		s := scoreOf(a, names)
		row := []string{s.AttemptID, cell(s.Student), cell(s.DisplayName), cell(s.Class), s.Quiz, strconv.Itoa(s.Number), s.Issued, s.Timestamp, strconv.Itoa(s.ScoreGiven), strconv.Itoa(s.ScoreMaximum)}
		perQuestion := map[string]string{}
		for _, qr := range a.Result.Questions {
			perQuestion[a.Quiz+"/"+qr.Question] = strconv.Itoa(qr.ScoreGiven)
		}
		for _, col := range cols {
			row = append(row, perQuestion[col])
		}
		w.Write(row)
	}
	w.Flush()
	return w.Error()
}

// cell keeps a spreadsheet from running a value as a formula (a student
// named "=HYPERLINK(...)"), as OWASP advises for CSV exports.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// grade grades a submission without storing it, for autograders.
func (h *handlers) grade(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var sub quiz.Submission
	if err := decodeJSON(body, &sub); err != nil {
		return err
	}
	if sub.Quiz == "" {
		return apiBadRequest("name the quiz: {\"quiz\": \"" + quiz.WatchQuizID + "\", \"answers\": [...]}")
	}
	q, ok := h.bank.Quiz(sub.Quiz)
	if !ok {
		return errUnknownQuiz(sub.Quiz)
	}
	r, err := q.Grade(sub.Answers)
	if err != nil {
		return h.attemptError(q.ID, "", err)
	}
	return c.JSON(http.StatusOK, GradeResult{APIVersion: APIVersion, Kind: "QuizResult", Result: r, GradingProgress: FullyGraded})
}
