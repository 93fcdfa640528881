package labhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/web/i18n"
)

// StudentPath is the drill-down into one student, under the dashboard:
// the page at DashboardPath+StudentPath+NAME, the JSON at
// APIPath+"/dashboard"+StudentPath+NAME.
const StudentPath = "/students/"

// requestsShown is how many of a student's recent requests the
// drill-down lists: enough to see what they tried last.
const requestsShown = 50

var studentsResource = schema.GroupResource{Group: Group, Resource: "students"}

// StudentDetail is one student as an instructor drills down into them:
// their row of the dashboard, the steps of every lab they started, their
// recent requests (from the tracer) and their quiz attempts.
type StudentDetail struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Generated  time.Time    `json:"generated"`
	Student    StudentRow   `json:"student"`
	Labs       []LabView    `json:"labs"`
	Requests   []RequestRow `json:"requests"`
	Attempts   []AttemptRow `json:"attempts"`
}

// RequestRow is one of the student's requests, newest first.
type RequestRow struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Verb      string    `json:"verb"`
	Resource  string    `json:"resource,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Path      string    `json:"path"`
	// As is who the request impersonated (kubectl --as), if anyone.
	As   string `json:"as,omitempty"`
	Code int    `json:"code"`
}

// AttemptRow is one submitted quiz attempt, in the order submitted.
type AttemptRow struct {
	Quiz         string    `json:"quiz"`
	Title        string    `json:"title"`
	Number       int       `json:"number"`
	Submitted    time.Time `json:"submitted"`
	ScoreGiven   int       `json:"scoreGiven"`
	ScoreMaximum int       `json:"scoreMaximum"`
}

// studentDetail reads one student for the drill-down, in lang; ok is
// false if no student of that name joined, started a lab or took a quiz.
func (h *handlers) studentDetail(ctx context.Context, name string, lang i18n.Lang) (*StudentDetail, error) {
	v, err := h.classSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(v.Students, func(r StudentRow) bool { return r.User == name })
	if i < 0 {
		return nil, apierrors.NewNotFound(studentsResource, name)
	}
	d := &StudentDetail{APIVersion: "kubelab.io/v1", Kind: "StudentDetail", Generated: v.Generated, Student: v.Students[i],
		Labs: []LabView{}, Requests: []RequestRow{}, Attempts: []AttemptRow{}}
	p, err := h.svc.store.Get(ctx, name)
	switch {
	case err == nil:
		for _, l := range h.svc.labs {
			if p.Labs[l.ID] != nil {
				d.Labs = append(d.Labs, labView(h.svc.labs, l, p, lang))
			}
		}
	case !errors.Is(err, labs.ErrNotFound):
		return nil, err
	}
	traces := h.cfg.Traces.Recent(name, tracesPerCheck)
	for j := len(traces) - 1; j >= 0 && len(d.Requests) < requestsShown; j-- {
		t := traces[j]
		if isAsset(t.Path) {
			continue
		}
		d.Requests = append(d.Requests, RequestRow{ID: t.ID, Time: t.Time, Verb: t.Verb, Resource: t.Resource, Namespace: t.Namespace,
			Name: t.Name, Path: t.Path, As: t.As, Code: t.Code})
	}
	if h.cfg.Quizzes != nil {
		attempts, err := h.cfg.Quizzes.List(ctx, quiz.Filter{Student: name})
		if err != nil {
			return nil, err
		}
		names := titlesIn(lang, h.svc.labs)
		for _, a := range attempts {
			d.Attempts = append(d.Attempts, AttemptRow{Quiz: a.Quiz, Title: names.quiz(a.Quiz), Number: a.Number, Submitted: a.Submitted,
				ScoreGiven: a.Result.ScoreGiven, ScoreMaximum: a.Result.ScoreMaximum})
		}
		slices.SortStableFunc(d.Attempts, func(a, b AttemptRow) int { return a.Submitted.Compare(b.Submitted) })
	}
	return d, nil
}

// apiStudent is the drill-down as JSON, for instructors and admins only:
// a student asking, even about themselves, is refused before anything is
// looked up, so that the answer does not tell who exists.
func (h *handlers) apiStudent(c echo.Context) error {
	if err := h.mayWatchClass(c); err != nil {
		return err
	}
	d, err := h.studentDetail(c.Request().Context(), c.Param("name"), langOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// studentPage is the drill-down's page, guarded as the dashboard's is.
func (h *handlers) studentPage(c echo.Context) error {
	return h.instructorPage(c, func() error {
		lang := langOf(c)
		d, err := h.studentDetail(c.Request().Context(), c.Param("name"), lang)
		if err != nil {
			return h.pageError(c, err, DashboardPath)
		}
		s := ui(lang)
		return h.render(c, http.StatusOK, fmt.Sprintf(s.StudentOf, d.Student.label()), studentView(d, s, titlesIn(lang, h.svc.labs)))
	})
}

// removePage is the drill-down's "Remove from the class" button: POST,
// then back to the room, which no longer lists the student.
func (h *handlers) removePage(c echo.Context) error {
	return h.instructorPage(c, func() error {
		if h.cfg.Remove == nil {
			return h.pageError(c, apierrors.NewNotFound(studentsResource, c.Param("name")), DashboardPath)
		}
		if err := h.cfg.Remove(c.Request().Context(), userOf(c), c.Param("name")); err != nil {
			return h.pageError(c, err, DashboardPath)
		}
		return back(c, DashboardPath)
	})
}

// isAsset: a request for a page's script, style or image, which says
// nothing of what the student tried.
func isAsset(path string) bool {
	return strings.HasPrefix(path, "/static/") || path == "/favicon.ico"
}
