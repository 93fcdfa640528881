package quizhttp

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
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

// AttemptRequest is a student's submission: the attempt id from the view
// they answered (optional), and their answers. Who submits is the
// request's user, never a field.
type AttemptRequest struct {
	Attempt string        `json:"attempt,omitempty"`
	Answers []quiz.Answer `json:"answers"`
}

func (h *handlers) routeAPI(e *echo.Echo) {
	g := e.Group(QuizzesPath, h.signedIn)
	g.GET("", h.apiList)
	g.GET("/:quiz", h.apiView)
	g.POST("/:quiz/attempts", h.apiSubmit)
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

// apiView starts an attempt: a fresh attempt id and the options in its
// order. Nothing is stored until the attempt is submitted.
func (h *handlers) apiView(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	// Each GET is a new attempt; a cached one would be submitted twice.
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, q.View(quiz.NewAttemptID(h.now()), langOf(c)))
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
	a, err := h.submit(c.Request().Context(), userOf(c), q, req.Attempt, lang, req.Answers)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, q.Explain(a.ID, a.Result, lang))
}

// submit grades answers and stores them as the user's attempt. An empty
// attempt id gets a fresh one; an attempt id can be submitted once.
func (h *handlers) submit(ctx context.Context, u pipeline.User, q *quiz.Quiz, id string, lang quiz.Lang, answers []quiz.Answer) (*quiz.Attempt, error) {
	now := h.now()
	if id == "" {
		id = quiz.NewAttemptID(now)
	}
	if !quiz.ValidAttemptID(id) {
		return nil, apiBadRequest("attempt: not an attempt id; take it from the quiz you answered, or leave it out")
	}
	r, err := q.Grade(answers)
	if err != nil {
		return nil, gradeError(q.ID, id, err)
	}
	a := &quiz.Attempt{
		ID: id, Quiz: q.ID, Student: u.Name, Class: classOf(u), Lang: lang,
		Answers: answers, Result: r, Submitted: now.UTC(),
	}
	if err := h.store.Create(ctx, a); err != nil {
		return nil, gradeError(q.ID, id, err)
	}
	h.log.InfoContext(ctx, "quiz attempt", "quiz", q.ID, "attempt", id, "student", u.Name, "score", r.ScoreGiven, "max", r.ScoreMaximum)
	return a, nil
}

// apiAttempts lists the user's own attempts at a quiz.
func (h *handlers) apiAttempts(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	attempts, err := h.store.List(c.Request().Context(), quiz.Filter{Student: userOf(c).Name, Quiz: q.ID})
	if err != nil {
		return err
	}
	list := ScoreList{APIVersion: APIVersion, Kind: "QuizScoreList", Items: []Score{}}
	for _, a := range attempts {
		list.Items = append(list.Items, scoreOf(a))
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
	return c.JSON(http.StatusOK, q.Explain(a.ID, a.Result, langOf(c)))
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
	if err == nil && !canSeeAttempt(u, a) {
		err = quiz.ErrAttemptNotFound
	}
	if err != nil {
		return nil, gradeError(q.ID, c.Param("attempt"), err)
	}
	return a, nil
}
