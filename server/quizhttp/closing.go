package quizhttp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/quiz"
)

// Closure says that a quiz is closed, and since when: the answer to an
// instructor's POST to /kubelab/v1/quizzes/<quiz>/close.
type Closure struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Quiz       string    `json:"quiz"`
	ClosedAt   time.Time `json:"closedAt"`
}

// closedAt is when q closed for everyone: at the instructor's close or
// the policy's deadline, whichever came first; the zero time while it is
// open.
func (h *handlers) closedAt(ctx context.Context, q *quiz.Quiz) (time.Time, error) {
	at, err := h.store.ClosedAt(ctx, q.ID)
	if err != nil {
		return time.Time{}, err
	}
	if d := h.policy.ClosesAt; !d.IsZero() && !h.now().Before(d) && (at.IsZero() || d.Before(at)) {
		at = d
	}
	return at, nil
}

// whileOpen refuses, once q is closed, what would take an attempt at it:
// its answers may be showing by then.
func (h *handlers) whileOpen(ctx context.Context, q *quiz.Quiz) error {
	at, err := h.closedAt(ctx, q)
	if err != nil {
		return err
	}
	if !at.IsZero() {
		return errClosed(q.ID, at)
	}
	return nil
}

func errClosed(quizID string, at time.Time) error {
	return statusError(http.StatusConflict, metav1.StatusReasonConflict,
		fmt.Sprintf("quiz %s closed at %s: it takes no more attempts, and your attempts at it now show the right answers", quizID, at.UTC().Format(time.RFC3339)))
}

// close closes q for everyone, as u: instructors and cluster admins only.
func (h *handlers) close(ctx context.Context, u pipeline.User, q *quiz.Quiz) (time.Time, error) {
	if !classroom.IsInstructor(u) {
		return time.Time{}, apierrors.NewForbidden(quizzesResource, q.ID,
			fmt.Errorf("only the instructor closes a quiz"))
	}
	at, err := h.store.Close(ctx, q.ID, h.now())
	if err == nil {
		h.log.InfoContext(ctx, "quiz closed", "quiz", q.ID, "by", u.Name, "at", at)
	}
	return at, err
}

// apiClose is POST /kubelab/v1/quizzes/<quiz>/close.
func (h *handlers) apiClose(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return err
	}
	at, err := h.close(c.Request().Context(), userOf(c), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, Closure{APIVersion: APIVersion, Kind: "QuizClosure", Quiz: q.ID, ClosedAt: at})
}

// closePage is the quiz list's "Close" button: POST /quiz/<quiz>/close,
// then back to the list (POST, redirect, GET).
func (h *handlers) closePage(c echo.Context) error {
	q, err := h.quizOf(c)
	if err != nil {
		return h.pageError(c, err, "/quiz")
	}
	if _, err := h.close(c.Request().Context(), userOf(c), q); err != nil {
		return h.pageError(c, err, "/quiz")
	}
	return c.Redirect(http.StatusSeeOther, string(withLang("/quiz", uiFor(langOf(c)))))
}
