package labhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/web"
)

func (h *handlers) routePages(e *echo.Echo) {
	g := e.Group(PagesPath, web.SecureHeaders, h.signedInPage)
	g.GET("", h.listPage)
	g.GET("/dashboard", h.dashboardPage)
	g.GET("/dashboard"+StudentPath+":name", h.studentPage)
	g.POST("/dashboard"+StudentPath+":name/remove", h.removePage)
	g.POST("/dashboard/signin", h.dashboardSignin)
	g.POST("/reset", h.resetPage)
	g.GET("/:lab", h.labPage)
	g.POST("/:lab/start", h.startPage)
	g.POST("/:lab/check", h.checkPage)
	g.POST("/:lab/restart", h.restartPage)
	g.POST("/:lab/answer", h.answerPage)
}

// signedInPage: the front door sends an anonymous browser's page views to
// sign in; this catches the rest (a form posted after the session
// expired). The dashboard has its own sign-in, for instructors.
func (h *handlers) signedInPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := c.Request().URL.Path
		if h.cfg.RequireSignIn && userOf(c).IsAnonymous() && !strings.HasPrefix(p, DashboardPath) {
			return h.pageError(c, apierrors.NewUnauthorized("sign in to do the labs"), "/signin")
		}
		return next(c)
	}
}

// render writes a page in the layout; the one way pages are written.
func (h *handlers) render(c echo.Context, status int, title string, body templ.Component) error {
	layout := h.cfg.Layout
	if strings.HasPrefix(c.Request().URL.Path, DashboardPath) {
		layout = h.cfg.RoomLayout
	}
	return web.Render(c, status, layout(title, langOf(c), body))
}

// back is where a form returns to: the page, in the page's language.
func back(c echo.Context, path string) error {
	return c.Redirect(http.StatusSeeOther, path+"?lang="+string(langOf(c)))
}

func (h *handlers) listPage(c echo.Context) error {
	p, err := h.svc.progress(c.Request().Context(), userOf(c))
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	s := ui(langOf(c))
	return h.render(c, http.StatusOK, s.LabsTitle, labsList(listView(h.svc.labs, p, langOf(c)), s, c.QueryParam("reset") != ""))
}

func (h *handlers) labPage(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	p, err := h.svc.progress(c.Request().Context(), userOf(c))
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	v := labView(h.svc.labs, l, p, langOf(c))
	nav := labNav{}
	if i := v.Number - 1; i > 0 {
		nav.Prev, nav.PrevTitle = h.svc.labs[i-1].ID, h.svc.labs[i-1].Title.In(v.Lang)
	}
	if v.Number < len(h.svc.labs) {
		nav.Next, nav.NextTitle = h.svc.labs[v.Number].ID, h.svc.labs[v.Number].Title.In(v.Lang)
	}
	nav.Total = len(h.svc.labs)
	return h.render(c, http.StatusOK, v.Title, labPage(v, nav, ui(v.Lang), c.QueryParam("answer"), c.QueryParam("step")))
}

func (h *handlers) startPage(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	if _, err := h.svc.start(c.Request().Context(), userOf(c), l); err != nil {
		return h.pageError(c, err, PagesPath+"/"+l.ID)
	}
	return back(c, PagesPath+"/"+l.ID)
}

func (h *handlers) restartPage(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	if _, err := h.restart(c, l); err != nil {
		return h.pageError(c, err, PagesPath+"/"+l.ID)
	}
	return back(c, PagesPath+"/"+l.ID)
}

func (h *handlers) checkPage(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	if _, err := h.svc.check(c.Request().Context(), userOf(c).Name); err != nil && !errors.Is(err, labs.ErrNotFound) {
		return h.pageError(c, err, PagesPath+"/"+l.ID)
	}
	return back(c, PagesPath+"/"+l.ID)
}

func (h *handlers) answerPage(c echo.Context) error {
	l, err := h.labOf(c)
	if err != nil {
		return h.pageError(c, err, PagesPath)
	}
	to := PagesPath + "/" + l.ID
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxBody)
	right, _, err := h.answer(c, l, c.FormValue("step"), c.FormValue("answer"))
	if err != nil {
		return h.pageError(c, err, to)
	}
	verdict := "wrong"
	if right {
		verdict = "right"
	}
	step := url.QueryEscape(c.FormValue("step"))
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("%s?lang=%s&answer=%s&step=%s#step-%s", to, langOf(c), verdict, step, step))
}

func (h *handlers) resetPage(c echo.Context) error {
	if _, err := h.reset(c); err != nil {
		return h.pageError(c, err, PagesPath)
	}
	return c.Redirect(http.StatusSeeOther, PagesPath+"?lang="+string(langOf(c))+"&reset=1")
}

// dashboardPage shows the class to instructors.
func (h *handlers) dashboardPage(c echo.Context) error {
	return h.instructorPage(c, func() error {
		v, err := h.classSnapshot(c.Request().Context())
		if err != nil {
			return h.pageError(c, err, PagesPath)
		}
		lang := langOf(c)
		s := ui(lang)
		return h.render(c, http.StatusOK, s.Dashboard, dashboardView(v, s, titlesIn(lang, h.svc.labs)))
	})
}

// instructorPage draws an instructor's page (the dashboard, the
// drill-down): a sign-in form for anonymous browsers and a friendly 403 for
// everyone else, students above all, before anything is read.
func (h *handlers) instructorPage(c echo.Context, draw func() error) error {
	u := userOf(c)
	switch {
	case isInstructor(u):
		return draw()
	case u.IsAnonymous():
		return h.renderDashboardSignin(c, http.StatusUnauthorized, "")
	default:
		s := ui(langOf(c))
		return h.render(c, http.StatusForbidden, s.Forbidden, forbiddenView(s))
	}
}

func (h *handlers) renderDashboardSignin(c echo.Context, status int, problem string) error {
	s := ui(langOf(c))
	return h.render(c, status, s.SigninTitle, dashboardSigninView(s, problem))
}

// pageError shows a browser a page, not a Status.
func (h *handlers) pageError(c echo.Context, err error, backTo string) error {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		h.cfg.Logger.ErrorContext(c.Request().Context(), "lab page", "path", c.Request().URL.Path, "error", err)
		st = apierrors.NewInternalError(errors.New("something went wrong on the server; the server log has the details"))
	}
	status := st.Status()
	title := http.StatusText(int(status.Code))
	return h.render(c, int(status.Code), title, errorView(title, status.Message, backTo, ui(langOf(c))))
}
