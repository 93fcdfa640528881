package labhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/storage/etcdspace"
	"github.com/kubelab/kubelab/web/i18n"
)

// dashboardTick refreshes dashboards that saw no progress, so that a
// student becomes "stuck" on screen without anyone acting.
const dashboardTick = 30 * time.Second

// dashboardGap is the least time between two snapshots: short enough to
// look instant, long enough that a class's stream of changes costs a few
// snapshots a second, not one per change.
const dashboardGap = 250 * time.Millisecond

// dashboardSessionLifetime is how long an instructor stays signed in to the
// dashboard: a teaching day. The session's token expires with its cookie.
const dashboardSessionLifetime = 12 * time.Hour

// ClassView is the dashboard: every student who joined the class, started
// a lab or took a quiz.
type ClassView struct {
	Generated time.Time `json:"generated"`
	// StuckAfter is --stuck-after as Go writes a duration ("10m0s"), for
	// clients; the page says it in words (stuckAfter).
	StuckAfter string `json:"stuckAfter"`
	stuckAfter time.Duration
	Labs       []LabSummary `json:"labs"`
	Students   []StudentRow `json:"students"`
	// Etcd is what kubelab knows of etcd's space: while it is full,
	// every write of the class is refused. Absent without a guard.
	Etcd *etcdspace.State `json:"etcd,omitempty"`
	// nextStuck is when the next student becomes stuck if nothing
	// changes: the dashboards are refreshed then, not a tick later.
	nextStuck time.Time
}

// StudentRow is one student on the dashboard.
type StudentRow struct {
	User string `json:"user"`
	// DisplayName is the name the student typed at sign-in, as typed;
	// Namespace is where they work.
	DisplayName string `json:"displayName,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Class       string `json:"class,omitempty"`
	// SameNameAs are the other students whose display names read the
	// same (classroom.SameNameKey): a throwaway account named as a
	// classmate is then told apart by its user name.
	SameNameAs []string `json:"sameNameAs,omitempty"`
	// Joined is when the student signed in (classroom mode).
	Joined *time.Time `json:"joined,omitempty"`
	// Lab and Step are where the student is (the lab opened last); Step
	// is 1-based, StepTitle in English; Done when the lab is finished.
	Lab       string `json:"lab,omitempty"`
	LabNumber int    `json:"labNumber,omitempty"`
	Step      int    `json:"step,omitempty"`
	Steps     int    `json:"steps,omitempty"`
	StepTitle string `json:"stepTitle,omitempty"`
	Done      bool   `json:"done,omitempty"`
	LabsDone  int    `json:"labsDone"`
	// Updated is the last progress (a lab started or a step passed);
	// absent for a student who has made none.
	Updated *time.Time `json:"updated,omitempty"`
	Stuck   bool       `json:"stuck"`
	// State is where the student stands, as the room's summary counts
	// and filters them: stuck, not-started (no lab step yet), working or
	// done (every lab finished).
	State RowState `json:"state"`
	// Idle is true for a student who joined --stuck-after ago or more
	// and has not started a lab: they need the instructor as much as
	// one who is stuck, and are listed next.
	Idle bool `json:"idle,omitempty"`
	// Quizzes is the best score of each quiz taken, by quiz id.
	Quizzes map[string]QuizScore `json:"quizzes"`
}

// RowState is where a student stands in the class.
type RowState string

// The states, in the order the room lists them by default, the ones that
// need the instructor first.
const (
	StateStuck      RowState = "stuck"
	StateNotStarted RowState = "not-started"
	StateWorking    RowState = "working"
	StateDone       RowState = "done"
)

// RowStates are the states in the room's order.
var RowStates = []RowState{StateStuck, StateNotStarted, StateWorking, StateDone}

// QuizScore is a student's best attempt at a quiz.
type QuizScore struct {
	ScoreGiven   int `json:"scoreGiven"`
	ScoreMaximum int `json:"scoreMaximum"`
	Attempts     int `json:"attempts"`
	// Submitted is when the last attempt was submitted.
	Submitted time.Time `json:"submitted"`
}

// classSnapshot reads who joined, everyone's progress and quiz attempts.
func (h *handlers) classSnapshot(ctx context.Context) (*ClassView, error) {
	all, err := h.svc.store.List(ctx)
	if err != nil {
		return nil, err
	}
	var attempts []*quiz.Attempt
	if h.cfg.Quizzes != nil {
		if attempts, err = h.cfg.Quizzes.List(ctx, quiz.Filter{}); err != nil {
			return nil, err
		}
	}
	var joined []classroom.Student
	if h.cfg.Class != nil {
		if joined, err = h.cfg.Class.Students(ctx); err != nil {
			return nil, err
		}
	}
	now := h.cfg.Now()
	v := &ClassView{Generated: now, StuckAfter: h.cfg.StuckAfter.String(), stuckAfter: h.cfg.StuckAfter, Labs: listView(h.svc.labs, labs.NewProgress("", "", ""), i18n.English).Items}
	if h.cfg.EtcdSpace != nil {
		state := h.cfg.EtcdSpace.State()
		v.Etcd = &state
	}
	rows := map[string]*StudentRow{}
	rowOf := func(user, class string) *StudentRow {
		r, ok := rows[user]
		if !ok {
			r = &StudentRow{User: user, Class: class, Quizzes: map[string]QuizScore{}}
			rows[user] = r
		}
		return r
	}
	// Who joined comes first: a student who has not started a lab is
	// listed too, for attendance.
	for _, st := range joined {
		r := rowOf(st.Name, st.Class)
		at := st.Joined
		r.DisplayName, r.Namespace, r.Joined = st.DisplayName, classroom.NamespaceOf(st.User()), &at
	}
	for _, p := range all {
		h.addProgress(v, rowOf(p.User, p.Class), p, now)
	}
	for _, a := range attempts {
		r := rowOf(a.Student, a.Class)
		q := r.Quizzes[a.Quiz]
		q.Attempts++
		if q.Attempts == 1 || a.Result.ScoreGiven > q.ScoreGiven {
			q.ScoreGiven = a.Result.ScoreGiven
		}
		q.ScoreMaximum = a.Result.ScoreMaximum
		if a.Submitted.After(q.Submitted) {
			q.Submitted = a.Submitted
		}
		r.Quizzes[a.Quiz] = q
	}
	for _, r := range rows {
		h.placeRow(v, r, now)
		v.Students = append(v.Students, *r)
	}
	sortRows(v.Students)
	markSameNames(v.Students)
	return v, nil
}

// placeRow gives r its state, and flags a student who joined
// --stuck-after ago or more without starting a lab (noting when the next
// one will be, in v.nextStuck).
func (h *handlers) placeRow(v *ClassView, r *StudentRow, now time.Time) {
	switch {
	case r.LabsDone >= len(h.svc.labs):
		r.State = StateDone
	case r.Stuck:
		r.State = StateStuck
	case r.Updated == nil:
		r.State = StateNotStarted
		if r.Joined != nil {
			idleAt := r.Joined.Add(h.cfg.StuckAfter)
			r.Idle = !now.Before(idleAt)
			if !r.Idle && (v.nextStuck.IsZero() || idleAt.Before(v.nextStuck)) {
				v.nextStuck = idleAt
			}
		}
	default:
		r.State = StateWorking
	}
}

// namesOrder orders display names as a reader looks one up, whatever its
// script: Unicode's collation (its root order, which places Thai, Latin
// and the rest each by its own rules), not the bytes, under which Thai
// names came after every Latin one.
var namesOrder = collate.New(language.Und, collate.IgnoreCase, collate.Loose)

// namesOrderMu guards namesOrder, which is not safe for concurrent use.
var namesOrderMu sync.Mutex

// sortRows lists the students who need the instructor first (stuck, then
// idle since they joined), then the rest, each part by display name as
// typed, then by user name.
func sortRows(rows []StudentRow) {
	rank := func(r StudentRow) int {
		switch {
		case r.State == StateStuck:
			return 0
		case r.Idle:
			return 1
		}
		return 2
	}
	namesOrderMu.Lock()
	defer namesOrderMu.Unlock()
	slices.SortFunc(rows, func(a, b StudentRow) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		if d := namesOrder.CompareString(a.label(), b.label()); d != 0 {
			return d
		}
		return strings.Compare(a.User, b.User)
	})
}

// markSameNames gives each student whose display name reads as another's
// the other's user names, sorted.
func markSameNames(rows []StudentRow) {
	byName := map[string][]string{}
	for _, r := range rows {
		if r.DisplayName != "" {
			key := classroom.SameNameKey(r.DisplayName)
			byName[key] = append(byName[key], r.User)
		}
	}
	for i, r := range rows {
		if r.DisplayName == "" {
			continue
		}
		if users := byName[classroom.SameNameKey(r.DisplayName)]; len(users) > 1 {
			rows[i].SameNameAs = slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(users), func(u string) bool { return u == r.User })))
		}
	}
}

// addProgress fills r from p: where the student is, labs done, and
// whether they are stuck (or when they will be, in v.nextStuck).
func (h *handlers) addProgress(v *ClassView, r *StudentRow, p *labs.Progress, now time.Time) {
	if r.Namespace == "" {
		r.Namespace = p.Namespace
	}
	if !p.Updated.IsZero() {
		at := p.Updated
		r.Updated = &at
	}
	for _, l := range h.svc.labs {
		if p.Labs[l.ID].Finished(l) {
			r.LabsDone++
		}
	}
	if l := labs.Find(h.svc.labs, p.Current); l != nil && p.Labs[l.ID] != nil {
		lp := p.Labs[l.ID]
		r.Lab, r.LabNumber, r.Steps, r.Done = l.ID, number(h.svc.labs, l.ID), len(l.Steps), lp.Done(l)
		if !r.Done {
			r.Step, r.StepTitle = lp.Step+1, l.Steps[lp.Step].Title.EN
		}
	}
	if r.LabsDone >= len(h.svc.labs) || r.Done || p.Updated.IsZero() {
		return
	}
	stuckAt := p.Updated.Add(h.cfg.StuckAfter)
	r.Stuck = !now.Before(stuckAt)
	if !r.Stuck && (v.nextStuck.IsZero() || stuckAt.Before(v.nextStuck)) {
		v.nextStuck = stuckAt
	}
}

// dashboardHTML is what a snapshot redraws of the dashboard: the class
// table's rows and the notice above it.
type dashboardHTML struct{ rows, notice string }

// dashboardParts draws a snapshot's parts of the dashboard in lang, as
// the page does.
func (h *handlers) dashboardParts(ctx context.Context, v *ClassView, lang i18n.Lang) dashboardHTML {
	s := ui(lang)
	var rows, notice strings.Builder
	if err := dashboardRows(v, s, titlesIn(lang, h.svc.labs)).Render(ctx, &rows); err != nil {
		h.cfg.Logger.Warn("drawing the dashboard", "error", err)
	}
	if err := etcdSpaceNotice(v, s).Render(ctx, &notice); err != nil {
		h.cfg.Logger.Warn("drawing the dashboard", "error", err)
	}
	return dashboardHTML{rows: rows.String(), notice: notice.String()}
}

// etcdSince says since when etcd has been full, as the rows say times.
func etcdSince(now time.Time, e *etcdspace.State, s uiText) string {
	if e.Since == nil {
		return s.JustNow
	}
	return ago(now, *e.Since, s)
}

// mayWatchClass refuses everyone but instructors and admins: 401 without
// a session, 403 for the rest, as a Status.
func (h *handlers) mayWatchClass(c echo.Context) error {
	u := userOf(c)
	if isInstructor(u) {
		return nil
	}
	if u.IsAnonymous() && h.cfg.RequireSignIn {
		return errUnauthorized()
	}
	return apierrors.NewForbidden(labsResource, "dashboard", fmt.Errorf("User %q is not an instructor: the class's progress is for instructors and admins", u.Name))
}

func errUnauthorized() error {
	return apierrors.NewUnauthorized("the dashboard needs an instructor's session or bearer token")
}

func (h *handlers) apiDashboard(c echo.Context) error {
	if err := h.mayWatchClass(c); err != nil {
		return err
	}
	v, err := h.classSnapshot(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// ws is the websocket of live progress: ?dashboard=1 is the class (for
// instructors), else the student's own lab ?lab=.
func (h *handlers) ws(c echo.Context) error {
	u := userOf(c)
	cl := &client{user: u.Name, lang: langOf(c)}
	if c.QueryParam("dashboard") != "" {
		if err := h.mayWatchClass(c); err != nil {
			return err
		}
		cl.instructor = true
	} else {
		l, err := h.findLab(c.QueryParam("lab"))
		if err != nil {
			return err
		}
		cl.lab = l
	}
	if !h.hub.accept(c, cl) {
		return nil
	}
	// The current state first; changes follow.
	ctx := c.Request().Context()
	if cl.instructor {
		if v, err := h.classSnapshot(ctx); err == nil {
			cl.Send(newClassMsg(v, h.dashboardParts(ctx, v, cl.lang)))
		}
	} else if p, err := h.svc.progress(ctx, u); err == nil {
		cl.Send(progressMsg{T: "lab", Lab: labView(h.svc.labs, cl.lab, p, cl.lang)})
	}
	h.hub.serve(cl)
	return nil
}

// dashboardSignin turns an instructor's bearer token into a browser
// session, so the dashboard opens in a browser: the token is checked,
// and only an instructor's or admin's is accepted.
func (h *handlers) dashboardSignin(c echo.Context) error {
	r := c.Request()
	lang := langOf(c)
	token := strings.TrimSpace(c.FormValue("token"))
	if h.cfg.Authenticate == nil || token == "" {
		return h.renderDashboardSignin(c, http.StatusUnauthorized, ui(lang).TokenMissing)
	}
	u, ok, err := h.cfg.Authenticate(r.Context(), token)
	if err != nil || !ok {
		return h.renderDashboardSignin(c, http.StatusUnauthorized, ui(lang).TokenWrong)
	}
	if !isInstructor(u) {
		return h.renderDashboardSignin(c, http.StatusForbidden, ui(lang).TokenNotInstructor)
	}
	if h.cfg.Mint == nil || h.cfg.SessionCookie == nil {
		// The instructor's token itself is never put in a cookie.
		return h.pageError(c, errors.New("the dashboard's sign-in has no way to mint a session"), DashboardPath)
	}
	session, err := h.cfg.Mint(r.Context(), token, dashboardSessionLifetime)
	if err != nil {
		return h.pageError(c, err, DashboardPath)
	}
	c.SetCookie(h.cfg.SessionCookie(r, session, dashboardSessionLifetime))
	return c.Redirect(http.StatusSeeOther, DashboardPath+"?lang="+string(lang))
}
