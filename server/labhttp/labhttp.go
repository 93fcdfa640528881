// Package labhttp serves the lesson's hands-on labs: the lab pages at
// /labs (templ views, English and Thai), the same labs as JSON at
// /kubelab/v1/labs, a websocket of the student's own progress, and the
// instructor's live dashboard of the class at /labs/dashboard.
//
// Steps are checked from what the server saw: the trace bus, the watch
// streams it served (observed by this package's middleware) and the state
// in etcd. Identity always comes from the front door.
package labhttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/labs/etcdstore"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/wshub"
	"github.com/kubelab/kubelab/storage/etcdspace"
	"github.com/kubelab/kubelab/web/i18n"
)

// Paths of the JSON API and the pages.
const (
	APIPath       = "/kubelab/v1/labs"
	PagesPath     = "/labs"
	DashboardPath = "/labs/dashboard"
)

// DefaultStuckAfter is how long without progress makes a student stuck.
const DefaultStuckAfter = 10 * time.Minute

// maxBody bounds an answer: the longest honest one is a few bytes.
const maxBody = 4 << 10

// Layout wraps a page's body in the site's layout. lang is "en" or "th".
type Layout func(title string, lang i18n.Lang, body templ.Component) templ.Component

// Config is what the labs need from the server.
type Config struct {
	// Pods are the pods the labs check, read as kubelab itself.
	Pods   Pods
	Etcd   *clientv3.Client
	Traces TraceSource
	// Store overrides where progress is kept; nil keeps it in etcd.
	Store labs.Store
	// Quizzes is where quiz attempts are, for the dashboard's scores.
	Quizzes quiz.Store
	// EtcdSpace, if set, says whether etcd is out of space: the dashboard
	// shows it, and is redrawn when it changes.
	EtcdSpace *etcdspace.Guard
	// Class is who joined (classroom mode; nil in local mode): the
	// dashboard lists them, with the names they typed, for attendance.
	Class *classroom.Class
	// Reset restores a namespace to what kubelab provisioned, as the
	// user asking: their deletes, authorized by RBAC like any others.
	Reset func(ctx context.Context, u pipeline.User, namespace string) error
	// Remove takes a student out of the class, as the user asking (the
	// drill-down's button); nil outside a class.
	Remove func(ctx context.Context, u pipeline.User, name string) error
	// Authenticate says whom a bearer token stands for: the dashboard's
	// sign-in page turns an instructor's token into a browser session.
	Authenticate func(ctx context.Context, token string) (pipeline.User, bool, error)
	// Mint makes a session token from a bearer token (the instructor's)
	// that works for lifetime, so that the browser holds a token of its own
	// (revoked at sign-out, expiring with its cookie, and refused once the
	// instructor's token changes), not the instructor's.
	Mint func(ctx context.Context, parent string, lifetime time.Duration) (string, error)
	// SessionCookie makes the browser session's cookie for a request.
	SessionCookie func(r *http.Request, token string, lifetime time.Duration) *http.Cookie
	// RequireSignIn refuses anonymous users (classroom mode).
	RequireSignIn bool
	// Websockets, if not nil, counts each user's open websockets against a
	// cap (shared with the live views' websockets).
	Websockets wshub.Counter
	// StuckAfter is how long without progress the dashboard calls stuck.
	StuckAfter time.Duration
	// Layout is the students' pages' layout; RoomLayout the instructor's
	// (the dashboard, a student's page, their sign-in), which has no
	// student's terminal. Without RoomLayout the room uses Layout.
	Layout     Layout
	RoomLayout Layout
	Logger     *slog.Logger
	Now        func() time.Time
}

// Labs is the installed labs; Close stops their checks and websockets.
type Labs struct {
	svc  *service
	hub  *hub
	stop context.CancelFunc
}

type handlers struct {
	cfg Config
	svc *service
	hub *hub
}

// Install routes the labs on e and starts checking steps. The watch
// observer is middleware: install after the front door, so that it sees
// each request's user.
func Install(e *echo.Echo, cfg Config) (*Labs, error) {
	if cfg.Pods == nil || cfg.Etcd == nil || cfg.Traces == nil {
		return nil, errors.New("labs: the pods, an etcd client and the trace bus are required")
	}
	if cfg.Store == nil {
		cfg.Store = etcdstore.New(cfg.Etcd)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StuckAfter <= 0 {
		cfg.StuckAfter = DefaultStuckAfter
	}
	if cfg.Layout == nil {
		return nil, errors.New("labs: a page layout is required")
	}
	if cfg.RoomLayout == nil {
		cfg.RoomLayout = cfg.Layout
	}
	hb := newHub(cfg.Websockets)
	svc := &service{labs: labs.All(), store: cfg.Store, world: &world{pods: cfg.Pods, etcd: cfg.Etcd}, traces: cfg.Traces,
		log: cfg.Logger, now: cfg.Now, locks: map[string]*sync.Mutex{}, active: map[string]bool{},
		queue: make(chan string, checkQueue), pending: map[string]bool{}}
	svc.changed = hb.progressChanged
	svc.watches = newWatches(svc.schedule, svc.isActive)
	ctx, stop := context.WithCancel(context.Background())
	if err := svc.loadActive(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("labs: %w", err)
	}
	go svc.run(ctx)
	go hb.runDashboards(ctx, dashboardTick, func(err error) { cfg.Logger.Warn("lab dashboard", "error", err) })
	h := &handlers{cfg: cfg, svc: svc, hub: hb}
	hb.snapshot, hb.draw = h.classSnapshot, h.dashboardParts
	followClass(ctx, cfg.Etcd, hb.classChanged)
	if cfg.EtcdSpace != nil {
		cfg.EtcdSpace.OnChange(hb.classChanged)
	}
	e.Use(svc.watches.observe)
	h.routeAPI(e)
	h.routePages(e)
	return &Labs{svc: svc, hub: hb, stop: stop}, nil
}

// Close stops the checks and ends every websocket: the server is stopping.
func (l *Labs) Close() {
	l.stop()
	l.hub.sockets.CloseAll()
}

// userOf is the request's user as the front door authenticated it.
func userOf(c echo.Context) pipeline.User {
	_, u, ok := pipeline.FromContext(c.Request().Context())
	if !ok {
		return pipeline.Anonymous()
	}
	return u
}

// classOf is the class named by the user's class group.
func classOf(u pipeline.User) string {
	for _, g := range u.Groups {
		if c, ok := strings.CutPrefix(g, classroom.ClassGroupPrefix); ok && c != "" {
			return c
		}
	}
	return ""
}

func namespaceOf(u pipeline.User) string { return classroom.NamespaceOf(u) }

// isInstructor: instructors and cluster admins see the class; students,
// graders and anonymous users do not.
func isInstructor(u pipeline.User) bool { return classroom.IsInstructor(u) }

// langOf is the page's language, by the site's one rule (i18n.Of).
func langOf(c echo.Context) i18n.Lang { return i18n.Of(c.Request()) }
