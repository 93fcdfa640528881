package quizhttp

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web"
)

func (h *handlers) routePages(e *echo.Echo) {
	g := e.Group("/quiz", web.SecureHeaders, h.signedInPage)
	g.GET("", h.listPage)
	g.GET("/:quiz", h.quizPage)
	g.POST("/:quiz", h.submitPage)
	g.POST("/:quiz/close", h.closePage)
	g.GET("/:quiz/attempts/:attempt", h.resultPage)
}

// signedInPage: the front door already sends an anonymous browser's
// page views to sign in; this catches the rest (a form posted after the
// session expired) with a page that says so.
func (h *handlers) signedInPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h.signIn && userOf(c).IsAnonymous() {
			return h.pageError(c, apierrors.NewUnauthorized(uiFor(langOf(c)).SignIn), "/signin")
		}
		return next(c)
	}
}

// render writes body as a page in the site's layout.
func (h *handlers) render(c echo.Context, status int, title string, body templ.Component) error {
	return web.Render(c, status, h.layout(title, langOf(c), body))
}

func (h *handlers) listPage(c echo.Context) error {
	lang, u := langOf(c), userOf(c)
	mine, err := h.store.List(c.Request().Context(), quiz.Filter{Student: u.Name})
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	var items []listItem
	for _, q := range h.bank.Quizzes() {
		it := listItem{ID: q.ID, Title: q.Title.In(lang), Intro: q.Intro.In(lang), Max: q.Max()}
		for _, a := range mine {
			if a.Quiz == q.ID {
				it.Attempts = append(it.Attempts, attemptLink{ID: a.ID, ScoreGiven: a.Result.ScoreGiven, Max: a.Result.ScoreMaximum})
			}
		}
		it.Left = h.policy.AttemptsLeft(len(it.Attempts))
		if it.ClosedAt, err = h.closedAt(c.Request().Context(), q); err != nil {
			return h.pageError(c, err, "/quiz")
		}
		it.CanClose = classroom.IsInstructor(u)
		items = append(items, it)
	}
	s := uiFor(lang)
	return h.render(c, http.StatusOK, s.QuizzesTitle, listView(items, s, u.Name))
}

// quizPage issues the user an attempt (their open one if they have one)
// and shows its form: the attempt's ids and order, no answers.
func (h *handlers) quizPage(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	closedAt, err := h.closedAt(c.Request().Context(), q)
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	if !closedAt.IsZero() {
		s := uiFor(langOf(c))
		return h.render(c, http.StatusConflict, s.Errors[http.StatusConflict],
			errorView(s.Errors[http.StatusConflict], fmt.Sprintf(s.Closed, closedOn(closedAt)), nil, "/quiz", s))
	}
	a, err := h.issue(c.Request().Context(), userOf(c), q)
	if apierrors.IsConflict(err) { // issuing an open quiz conflicts only when no attempt is left
		s := uiFor(langOf(c))
		return h.render(c, http.StatusConflict, s.Errors[http.StatusConflict],
			errorView(s.Errors[http.StatusConflict], fmt.Sprintf(s.NoAttemptsLeft, h.policy.Attempts), nil, "/quiz", s))
	}
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	v := q.View(a, langOf(c))
	// The form holds the user's attempt; a shared cache must not hand it on.
	c.Response().Header().Set("Cache-Control", "no-store")
	return h.render(c, http.StatusOK, v.Title, quizForm(v, uiFor(v.Lang)))
}

// submitPage grades and stores the form's answers, then sends the browser
// to the explained result (POST, redirect, GET: a reload does not resubmit).
func (h *handlers) submitPage(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	back := "/quiz/" + q.ID
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return h.pageError(c, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a submission is at most %d bytes", MaxBodyBytes)), back)
		}
		return h.pageError(c, apierrors.NewBadRequest("the form could not be read: "+err.Error()), back)
	}
	answers, err := formAnswers(r.PostForm)
	if err != nil {
		return h.pageError(c, err, back)
	}
	lang := langOf(c)
	id := r.PostForm.Get("attempt")
	a, err := h.submit(r.Context(), userOf(c), q, id, lang, answers)
	if apierrors.IsConflict(err) {
		// Sent twice (a reload, the back button): the first one's result.
		if done, gerr := h.store.Get(r.Context(), userOf(c).Name, q.ID, id); gerr == nil && !done.Open() {
			back = "/quiz/" + q.ID + "/attempts/" + id
		}
	}
	if err != nil {
		return h.pageError(c, err, back)
	}
	return c.Redirect(http.StatusSeeOther, "/quiz/"+q.ID+"/attempts/"+a.ID+"?lang="+string(lang))
}

// formAnswers reads the quiz form: "q:<question>" is a choice,
// "line:<question>:<n>" marks line n with a reason (empty: not marked).
// A field the form does not have is an error, not something to ignore.
func formAnswers(form url.Values) ([]quiz.Answer, error) {
	var answers []quiz.Answer
	marks := map[string]int{} // question -> index in answers
	for _, k := range slices.Sorted(maps.Keys(form)) {
		switch {
		case k == "attempt" || k == "lang":
		case strings.HasPrefix(k, "q:"):
			for _, v := range form[k] {
				answers = append(answers, quiz.Answer{Question: strings.TrimPrefix(k, "q:"), Choice: v})
			}
		case strings.HasPrefix(k, "line:"):
			question, n, ok := strings.Cut(strings.TrimPrefix(k, "line:"), ":")
			line, err := strconv.Atoi(n)
			if !ok || err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("form field %q: want line:<question>:<line number>", k))
			}
			for _, reason := range form[k] {
				if reason == "" {
					continue
				}
				i, seen := marks[question]
				if !seen {
					i = len(answers)
					marks[question] = i
					answers = append(answers, quiz.Answer{Question: question})
				}
				answers[i].Marks = append(answers[i].Marks, quiz.Mark{Line: line, Reason: reason})
			}
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the quiz form has no field %q", k))
		}
	}
	slices.SortStableFunc(answers, func(a, b quiz.Answer) int { return strings.Compare(a.Question, b.Question) })
	for i := range answers {
		slices.SortStableFunc(answers[i].Marks, func(a, b quiz.Mark) int { return a.Line - b.Line })
	}
	return answers, nil
}

func (h *handlers) resultPage(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	a, err := h.attemptFor(c, q)
	if err != nil {
		return h.pageError(c, err, "/quiz/"+q.ID)
	}
	lang := langOf(c)
	ctx := c.Request().Context()
	e, err := h.explain(ctx, q, a, lang)
	if err != nil {
		return h.pageError(c, err, "/quiz/"+q.ID)
	}
	theirs, err := h.store.List(ctx, quiz.Filter{Student: a.Student, Quiz: q.ID})
	if err != nil {
		return h.pageError(c, err, "/quiz/"+q.ID)
	}
	return h.render(c, http.StatusOK, e.Title, resultView(e, uiFor(lang), h.policy, h.policy.AttemptsLeft(len(theirs))))
}

// pageError shows a browser a page, not a Status: the status's message,
// and a submission's problems one per line.
func (h *handlers) pageError(c echo.Context, err error, back string) error {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		h.log.ErrorContext(c.Request().Context(), "quiz page", "path", c.Request().URL.Path, "error", err)
		st = apierrors.NewInternalError(errors.New("something went wrong on the server; the server log has the details"))
	}
	status := st.Status()
	var problems []string
	if status.Details != nil {
		for _, cause := range status.Details.Causes {
			problems = append(problems, cause.Field+": "+cause.Message)
		}
	}
	s := uiFor(langOf(c))
	title, ok := s.Errors[int(status.Code)]
	if !ok {
		title = http.StatusText(int(status.Code))
	}
	message := status.Message
	if len(problems) > 0 {
		message = s.NotGraded
	}
	return h.render(c, int(status.Code), title, errorView(title, message, problems, back, s))
}
