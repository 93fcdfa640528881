package quizhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web/i18n"
)

// issue gives u an attempt at q: their open one, or a new one while they
// have attempts left. Both the quiz page and the API's view call it, so
// every attempt a student can submit was issued by the server, to them,
// for this quiz.
func (h *handlers) issue(ctx context.Context, u pipeline.User, q *quiz.Quiz) (*quiz.Attempt, error) {
	if err := h.whileOpen(ctx, q); err != nil {
		return nil, err
	}
	a, err := h.store.Issue(ctx, q.NewAttempt(u.Name, classOf(u), h.now()), h.policy.Attempts)
	if err != nil {
		return nil, h.attemptError(q.ID, "", err)
	}
	return a, nil
}

// submit grades answers (in the attempt's option ids) and stores them on
// u's open attempt id at q, paced per user.
func (h *handlers) submit(ctx context.Context, u pipeline.User, q *quiz.Quiz, id string, lang i18n.Lang, answers []quiz.Answer) (*quiz.Attempt, error) {
	now := h.now()
	if ok, wait := h.pace.allow(u.Name, now); !ok {
		return nil, errTooManySubmissions(wait)
	}
	if err := h.whileOpen(ctx, q); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, apiBadRequest(fmt.Sprintf("attempt: required: submit the attempt the server issued you (GET %s/%s gives one)", QuizzesPath, q.ID))
	}
	// Looked up under u's own name: another student's attempt, or one
	// at another quiz, is not found.
	a, err := h.store.Get(ctx, u.Name, q.ID, id)
	if err == nil && !a.Open() {
		err = quiz.ErrAttemptSubmitted
	}
	if err == nil {
		a.Class = classOf(u)
		err = q.GradeAttempt(a, answers, lang, now)
	}
	if err == nil {
		err = h.store.Submit(ctx, a, h.policy.Attempts)
	}
	if err != nil {
		return nil, h.attemptError(q.ID, id, err)
	}
	h.log.InfoContext(ctx, "quiz attempt", "quiz", q.ID, "attempt", id, "number", a.Number, "student", u.Name, "score", a.Result.ScoreGiven, "max", a.Result.ScoreMaximum)
	return a, nil
}

// explain shows one of student's graded attempts as the reveal policy
// allows at the moment: after-last-attempt looks at how many attempts
// they have submitted now, and every policy but never at whether the quiz
// is closed.
func (h *handlers) explain(ctx context.Context, q *quiz.Quiz, a *quiz.Attempt, lang i18n.Lang) (quiz.Explained, error) {
	closedAt, err := h.closedAt(ctx, q)
	if err != nil {
		return quiz.Explained{}, err
	}
	submitted := 0
	if h.policy.Reveal == quiz.RevealAfterLastAttempt && h.policy.Attempts > 0 {
		mine, err := h.store.List(ctx, quiz.Filter{Student: a.Student, Quiz: q.ID})
		if err != nil {
			return quiz.Explained{}, err
		}
		submitted = len(mine)
	}
	return q.Explain(a, lang, h.policy.Reveals(submitted, !closedAt.IsZero())), nil
}

// attemptError maps the quiz package's errors to Status errors that say
// what to do next.
func (h *handlers) attemptError(quizID, attemptID string, err error) error {
	var inv *quiz.InvalidError
	switch {
	case errors.As(err, &inv):
		return errInvalid(quizID, inv)
	case errors.Is(err, quiz.ErrAttemptSubmitted):
		return statusError(http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("attempt %s at quiz %s has already been submitted; open the quiz again for a new attempt", attemptID, quizID))
	case errors.Is(err, quiz.ErrAttemptNotFound):
		st := apierrors.NewNotFound(attemptsResource, attemptID)
		st.ErrStatus.Message = fmt.Sprintf("attempt %q at quiz %s was not issued to you: open the quiz for an attempt of your own", attemptID, quizID)
		return st
	case errors.Is(err, quiz.ErrNoAttemptsLeft):
		return statusError(http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("you have used all %d attempts at quiz %s that the instructor allows", h.policy.Attempts, quizID))
	}
	return err
}

func statusError(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}
