package labhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/pipeline"
)

// Group is the API group named in the labs' Status errors.
const Group = "kubelab.io"

var (
	labsResource  = schema.GroupResource{Group: Group, Resource: "labs"}
	stepsResource = schema.GroupResource{Group: Group, Resource: "steps"}
)

// AnswerRequest is a student's answer to a question step.
type AnswerRequest struct {
	Answer string `json:"answer"`
}

// AnswerResult says whether the answer was right, and where the lab is now.
type AnswerResult struct {
	Correct bool    `json:"correct"`
	Lab     LabView `json:"lab"`
}

func (h *handlers) routeAPI(e *echo.Echo) {
	g := e.Group(APIPath, h.signedInAPI)
	g.GET("", h.apiList)
	g.GET("/ws", h.ws)
	g.GET("/dashboard", h.apiDashboard)
	g.GET("/dashboard"+StudentPath+":name", h.apiStudent)
	g.POST("/reset", h.apiReset)
	g.GET("/:lab", h.apiView)
	g.POST("/:lab/start", h.apiStart)
	g.POST("/:lab/check", h.apiCheck)
	g.POST("/:lab/restart", h.apiRestart)
	g.POST("/:lab/steps/:step/answer", h.apiAnswer)
}

// signedInAPI refuses anonymous users in classroom mode with kube's 401.
func (h *handlers) signedInAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h.cfg.RequireSignIn && userOf(c).IsAnonymous() {
			return pipeline.Unauthorized()
		}
		return next(c)
	}
}

func (h *handlers) labOf(c echo.Context) (*labs.Lab, error) { return h.findLab(c.Param("lab")) }

func (h *handlers) findLab(id string) (*labs.Lab, error) {
	l := labs.Find(h.svc.labs, id)
	if l == nil {
		return nil, apierrors.NewNotFound(labsResource, id)
	}
	return l, nil
}

func (h *handlers) apiList(c echo.Context) error {
	p, err := h.svc.progress(c.Request().Context(), userOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listView(h.svc.labs, p, langOf(c)))
}

func (h *handlers) apiView(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return err
	}
	p, err := h.svc.progress(c.Request().Context(), userOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, labView(h.svc.labs, l, p, langOf(c)))
}

func (h *handlers) apiStart(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return err
	}
	p, err := h.svc.start(c.Request().Context(), userOf(c), l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, labView(h.svc.labs, l, p, langOf(c)))
}

// apiCheck runs the checks now; they also run by themselves whenever one
// of the student's requests is traced.
func (h *handlers) apiCheck(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return err
	}
	u := userOf(c)
	p, err := h.svc.check(c.Request().Context(), u.Name)
	if errors.Is(err, labs.ErrNotFound) || (err == nil && p.Labs[l.ID] == nil) {
		return apierrors.NewBadRequest(fmt.Sprintf("lab %q is not started: POST %s/%s/start first", l.ID, APIPath, l.ID))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, labView(h.svc.labs, l, p, langOf(c)))
}

// apiRestart starts a lab's steps over: "Do it again".
func (h *handlers) apiRestart(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return err
	}
	p, err := h.restart(c, l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, labView(h.svc.labs, l, p, langOf(c)))
}

// restart starts lab l over, mapping the lab package's errors to Statuses.
func (h *handlers) restart(c echo.Context, l *labs.Lab) (*labs.Progress, error) {
	p, err := h.svc.restart(c.Request().Context(), userOf(c), l)
	if errors.Is(err, labs.ErrNotFound) || errors.Is(err, labs.ErrNotStarted) {
		return nil, apierrors.NewConflict(labsResource, l.ID, fmt.Errorf("lab %q is not started: there is nothing to do again", l.ID))
	}
	return p, err
}

func (h *handlers) apiAnswer(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	if err != nil {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("an answer is at most %d bytes", maxBody))
	}
	var req AnswerRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return apierrors.NewBadRequest(`the body is not an answer: want {"answer": "..."}: ` + err.Error())
	}
	right, p, err := h.answer(c, l, c.Param("step"), req.Answer)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AnswerResult{Correct: right, Lab: labView(h.svc.labs, l, p, langOf(c))})
}

// answer grades an answer, mapping the lab package's errors to Statuses.
func (h *handlers) answer(c echo.Context, l *labs.Lab, step, answer string) (bool, *labs.Progress, error) {
	if st, _ := l.Step(step); st == nil {
		return false, nil, apierrors.NewNotFound(stepsResource, step)
	}
	right, p, err := h.svc.answer(c.Request().Context(), userOf(c), l, step, answer)
	switch {
	case errors.Is(err, labs.ErrNotFound), errors.Is(err, labs.ErrNotCurrent):
		return false, nil, apierrors.NewConflict(stepsResource, step, fmt.Errorf("step %q is not the current step of lab %q (start the lab, and do the steps in order)", step, l.ID))
	case errors.Is(err, labs.ErrNotQuestion):
		return false, nil, apierrors.NewBadRequest(err.Error())
	case err != nil:
		return false, nil, err
	}
	h.svc.schedule(p.User)
	return right, p, nil
}

// apiReset restores the student's namespace.
func (h *handlers) apiReset(c echo.Context) error {
	ns, err := h.reset(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Message: fmt.Sprintf("namespace %q is as kubelab made it: the lesson's pods, its default ServiceAccount and your RoleBinding", ns)})
}

func (h *handlers) reset(c echo.Context) (string, error) {
	u := userOf(c)
	ns := namespaceOf(u)
	if h.cfg.Reset == nil {
		return "", apierrors.NewServiceUnavailable("resetting is not available on this server")
	}
	if err := h.cfg.Reset(c.Request().Context(), u, ns); err != nil {
		return "", err
	}
	h.cfg.Logger.Info("lab namespace reset", "user", u.Name, "namespace", ns)
	return ns, nil
}
