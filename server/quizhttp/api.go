package quizhttp

import (
	"net/http"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/quiz"
)

// QuizzesPath is the root of the quiz API for students' own clients.
const QuizzesPath = "/kubelab/v1/quizzes"

// QuizSummary names a quiz in the list of quizzes.
type QuizSummary struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	Intro        string `json:"intro"`
	ScoreMaximum int    `json:"scoreMaximum"`
}

// QuizList is the answer to GET /kubelab/v1/quizzes.
type QuizList struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Items      []QuizSummary `json:"items"`
}

// AttemptRequest is a student's submission: the attempt id the server
// issued them with the view they answered, and their answers in that
// attempt's option ids. Who submits is the request's user, never a field.
type AttemptRequest struct {
	Attempt string        `json:"attempt"`
	Answers []quiz.Answer `json:"answers"`
}

// AttemptRef is one of a student's own submitted attempts, as the student
// sees it in their list: when, and the score, nothing of the answers.
type AttemptRef struct {
	AttemptID    string `json:"attemptId"`
	Number       int    `json:"number"`
	Issued       string `json:"issued"`
	Timestamp    string `json:"timestamp"`
	ScoreGiven   int    `json:"scoreGiven"`
	ScoreMaximum int    `json:"scoreMaximum"`
}

// AttemptList is the answer to GET /kubelab/v1/quizzes/<quiz>/attempts.
type AttemptList struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// AttemptsLeft is how many more attempts the user may submit; -1 is
	// no limit.
	AttemptsLeft int          `json:"attemptsLeft"`
	Items        []AttemptRef `json:"items"`
}

func (h *handlers) routeAPI(e *echo.Echo) {
	g := e.Group(QuizzesPath, h.signedIn)
	g.GET("", h.apiList)
	g.GET("/:quiz", h.apiView)
	g.POST("/:quiz/attempts", h.apiSubmit)
	g.POST("/:quiz/close", h.apiClose)
	g.GET("/:quiz/attempts", h.apiAttempts)
	g.GET("/:quiz/attempts/:attempt", h.apiAttempt)
}

// signedIn refuses anonymous users when sign-in is required: an attempt
// is always somebody's.
func (h *handlers) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h.signIn && userOf(c).IsAnonymous() {
			return apierrors.NewUnauthorized("sign in to take a quiz: join the class at /signin, or send your bearer token")
		}
		return next(c)
	}
}

func (h *handlers) apiList(c echo.Context) error {
	lang := langOf(c)
	list := QuizList{APIVersion: APIVersion, Kind: "QuizList", Items: []QuizSummary{}}
	for _, q := range h.bank.Quizzes() {
		list.Items = append(list.Items, QuizSummary{ID: q.ID, Title: q.Title.In(lang), Intro: q.Intro.In(lang), ScoreMaximum: q.Max()})
	}
	return c.JSON(http.StatusOK, list)
}

func (h *handlers) quizOf(c echo.Context) (*quiz.Quiz, error) {
	q, ok := h.bank.Quiz(c.Param("quiz"))
	if !ok {
		return nil, errUnknownQuiz(c.Param("quiz"))
	}
	return q, nil
}

// apiView issues the user an attempt (their open one if they have one)
// and shows the quiz in its order and ids, without answers.
func (h *handlers) apiView(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	a, err := h.issue(c.Request().Context(), userOf(c), q)
	if err != nil {
		return err
	}
	// The view carries the attempt; a shared cache must not hand it on.
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, q.View(a, langOf(c)))
}

func (h *handlers) apiSubmit(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req AttemptRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	lang := langOf(c)
	ctx := c.Request().Context()
	a, err := h.submit(ctx, userOf(c), q, req.Attempt, lang, req.Answers)
	if err != nil {
		return err
	}
	e, err := h.explain(ctx, q, a, lang)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, e)
}

// apiAttempts lists the user's own submitted attempts at a quiz.
func (h *handlers) apiAttempts(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	attempts, err := h.store.List(c.Request().Context(), quiz.Filter{Student: userOf(c).Name, Quiz: q.ID})
	if err != nil {
		return err
	}
	list := AttemptList{APIVersion: APIVersion, Kind: "QuizAttemptList", AttemptsLeft: h.policy.AttemptsLeft(len(attempts)), Items: []AttemptRef{}}
	for _, a := range attempts {
		list.Items = append(list.Items, refOf(a))
	}
	return c.JSON(http.StatusOK, list)
}

// apiAttempt explains one of the user's graded attempts; a grader may
// name another student with ?student=.
func (h *handlers) apiAttempt(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	a, err := h.attemptFor(c, q)
	if err != nil {
		return err
	}
	e, err := h.explain(c.Request().Context(), q, a, langOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

// attemptFor reads the attempt in the path, the user's own or, for a
// grader, ?student='s. Someone else's attempt is "not found", so its
// existence is not given away.
func (h *handlers) attemptFor(c echo.Context, q *quiz.Quiz) (*quiz.Attempt, error) {
	u := userOf(c)
	student := u.Name
	if s := c.QueryParam("student"); s != "" && classroom.CanGrade(u) {
		student = s
	}
	a, err := h.store.Get(c.Request().Context(), student, q.ID, c.Param("attempt"))
	// An open attempt has no result yet: to its student it is the quiz
	// page's business, not a result.
	if err == nil && (!canSeeAttempt(u, a) || a.Open()) {
		err = quiz.ErrAttemptNotFound
	}
	if err != nil {
		return nil, h.attemptError(q.ID, c.Param("attempt"), err)
	}
	return a, nil
}
