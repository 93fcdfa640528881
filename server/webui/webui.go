// Package webui serves kubelab to browsers: the lesson's pages in English
// and Thai, and the live views (pipeline tracer, watch timeline, etcd
// inspector, poll vs watch) as websocket streams of the real API server.
// Whatever a page does to the cluster it does as the browser's user: the
// timeline's lanes and its window push call the registry's pods store
// with that user, so RBAC, admission and the trace decide and record as
// for kubectl; the views that show an HTTP exchange itself send it with
// the browser's credentials.
package webui

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/trace"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/server/wshub"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/watchcache"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// Deps is what the web UI needs from the server.
type Deps struct {
	API *kubeapi.API
	// Pods is the registry's pods store: the timeline's lanes list and
	// watch, and its window push changes, pods through it as the browser's
	// user, so that RBAC decides what each student sees.
	Pods PodStore
	// PodsCache is the pods watch cache, whose window the timeline draws.
	PodsCache WatchWindow
	Traces    *trace.Bus
	Compactor Compactor
	// Self is kubelab's own listener, where the views that show an HTTP
	// exchange (Run it live, the poll-versus-watch race, the inspector's
	// API JSON) send it.
	Self   Self
	Etcd   *clientv3.Client
	Logger *slog.Logger
	// Classroom is classroom mode: the live views are for signed-in
	// users only (anonymous users share one name, so a tracer would show
	// each the others' requests), and only instructors and admins compact
	// the class's etcd.
	Classroom bool
	// Websockets, if not nil, counts each user's open live views against
	// a cap, so that one student's runaway tabs cannot hold the class's
	// memory. The server shares it with the labs' websockets: the cap is
	// on the user, whichever page opened them.
	Websockets wshub.Counter
	// KubeCore is kube-apiserver's own code serving the API
	// (--apiserver=kube), in local mode. It has no registry, pods store
	// or watch cache of kubelab's to hand the views (API, Pods, PodsCache
	// and Compactor are nil): the pages, the tracer, "Run it live" and
	// poll versus watch run, over HTTP and the trace bus as on kubelab's
	// core; the views built on kubelab's watch cache (the timeline, its
	// window, compaction) and the etcd inspector say that they are not
	// on the kube core yet (web.KubeCoreViews).
	KubeCore bool
}

// PodStore is what the live views do with pods, each call as the user
// in its context (registry.WithUser).
type PodStore interface {
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, opts storage.WatchOptions) (watch.Interface, error)
	Patch(ctx context.Context, k storage.Key, pt types.PatchType, patch []byte, opts registry.PatchOptions) (runtime.Object, error)
}

// WatchWindow is a watch cache's window and clock, as the timeline draws
// and moves it (see storage/watchcache).
type WatchWindow interface {
	Window() watchcache.Window
	DropWait(rv int64, now time.Time) (wait time.Duration, made bool)
	// WaitUntilFresh waits, a few seconds at most, until the cache has
	// seen revision rev.
	WaitUntilFresh(ctx context.Context, rev int64) error
}

// Compactor compacts etcd on demand and says where it is compacted.
type Compactor interface {
	CompactNow(ctx context.Context) (int64, error)
	// Compacted is etcd's compacted revision, read from etcd, so that a
	// compaction made behind kubelab's back shows too.
	Compacted(ctx context.Context) (int64, error)
}

// UI serves the pages and live views.
type UI struct {
	Deps
	lessons map[i18n.Lang]*web.Lesson
	hub     *hub
	ctx     context.Context
	stop    context.CancelFunc
	gate    compactGate
	pusher  windowPusher
	events  eventMessages
	// compacted is etcd's compacted revision as last read, at most once
	// per clock tick.
	compacted compactedRevision
}

// Install adds the web UI's routes to e.
func Install(e *echo.Echo, d Deps) (*UI, error) {
	lessons, err := web.LoadLessons()
	if err != nil {
		return nil, err
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Traces == nil || d.Self.Client == nil || d.Self.URL == "" || d.Self.ViewKey == "" {
		return nil, errors.New("web UI: the trace bus and the way to kubelab's own listener are required")
	}
	if !d.KubeCore && (d.API == nil || d.Pods == nil || d.PodsCache == nil || d.Compactor == nil || d.Etcd == nil) {
		return nil, errors.New("web UI: the API, the pods, their watch cache, the compactor and etcd are required")
	}
	u := &UI{Deps: d, lessons: lessons, hub: newHub(d.Websockets)}
	u.ctx, u.stop = context.WithCancel(context.Background())
	go u.hub.runTraces(u.ctx, d.Traces.Subscribe(u.ctx, nil, 1024))
	if !d.KubeCore {
		go u.hub.runClock(u.ctx, u.horizonsNow, clockInterval)
	}
	// Not e.Group with middleware: that would route every unknown path and
	// method through the group (405s would become 404s for the whole API).
	g := secured{e}
	g.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/lesson/") })
	g.GET("/lesson", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/lesson/") })
	g.GET("/lesson/", u.lessonPage)
	g.GET("/lesson/:slug", u.lessonPage)
	g.GET("/lab", u.labPage)
	g.GET("/lang", u.setLang)
	static := http.StripPrefix("/static/", http.FileServerFS(web.Static))
	g.GET("/static/*", func(c echo.Context) error {
		if _, err := fs.Stat(web.Static, strings.TrimPrefix(c.Request().URL.Path, "/static/")); err != nil {
			return u.NotFound(c)
		}
		if c.QueryParam("v") != "" {
			c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		static.ServeHTTP(c.Response(), c.Request())
		return nil
	})
	g.GET("/ui/ws/trace", u.signedIn(u.traceStream))
	g.GET("/ui/ws/run", u.signedIn(u.runStream))
	g.GET("/ui/ws/pollwatch", u.signedIn(u.pollWatchStream))
	if d.KubeCore {
		return u, nil
	}
	g.GET("/ui/ws/watch", u.signedIn(u.watchStream))
	g.POST("/ui/compact", u.compact)
	g.POST("/ui/window/push", u.signedIn(u.pushWindow))
	g.GET("/ui/etcd/keys", u.etcdKeys)
	g.GET("/ui/etcd/value", u.etcdValue)
	return u, nil
}

// Close ends every live view: the server is shutting down.
func (u *UI) Close() {
	u.stop()
	u.hub.sockets.CloseAll()
}

// secured registers routes whose responses carry web.SecureHeaders.
type secured struct{ e *echo.Echo }

func (s secured) GET(path string, h echo.HandlerFunc)  { s.e.GET(path, web.SecureHeaders(h)) }
func (s secured) POST(path string, h echo.HandlerFunc) { s.e.POST(path, web.SecureHeaders(h)) }

// signedIn refuses an anonymous user in classroom mode with kube's 401,
// before a live view is opened.
func (u *UI) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u.Classroom && user(c).IsAnonymous() {
			return pipeline.Unauthorized()
		}
		return next(c)
	}
}

// mayCompact says whether the user may compact etcd: anyone in local
// mode (whoever runs kubelab owns its etcd); in a class, whose etcd every
// student's watches share, instructors, graders and admins only.
func (u *UI) mayCompact(c echo.Context) bool {
	return !u.Classroom || classroom.CanGrade(user(c))
}

// user is who the front door authenticated the request as.
func user(c echo.Context) pipeline.User {
	_, u, _ := pipeline.FromContext(c.Request().Context())
	return u
}

// allowed asks the API, with the browser's credentials, whether a GET of
// path succeeds: RBAC decides what the web UI lets a user do beyond the
// API, from what the user may do through it.
func (u *UI) allowed(c echo.Context, path string) bool {
	rec, err := u.do(u.request(c.Request().Context(), callerOf(c.Request()), http.MethodGet, path, "", "", nil))
	return err == nil && rec.Code == http.StatusOK
}

// namespace is where the reader's live commands run.
func namespace(c echo.Context) string { return classroom.NamespaceOf(user(c)) }

func (u *UI) lessonPage(c echo.Context) error {
	lang := i18n.Of(c.Request())
	l := u.lessons[lang]
	slug := c.Param("slug")
	if slug == "" {
		slug = l.Pages[0].Slug
	}
	p, idx := l.Page(slug)
	if p == nil {
		return u.NotFound(c)
	}
	m := web.Meta{Title: p.Title, Lang: lang, Section: "lesson"}
	return u.render(c, web.PageWith(m, web.LessonView(l, idx, namespace(c), u.mayCompact(c))))
}

func (u *UI) labPage(c echo.Context) error {
	lang := i18n.Of(c.Request())
	m := web.Meta{Title: web.T(lang, "lab.title"), Lang: lang, Section: "lab"}
	return u.render(c, web.PageWith(m, web.LabView(lang, namespace(c), u.mayCompact(c))))
}

// render writes a page with live views; on the kube core, the views that
// do not run on it render as saying so.
func (u *UI) render(c echo.Context, page templ.Component) error {
	if u.KubeCore {
		c.SetRequest(c.Request().WithContext(web.OnKubeCore(c.Request().Context())))
	}
	return web.Render(c, http.StatusOK, page)
}

// NotFound is the friendly page for a browser at an unknown address.
func (u *UI) NotFound(c echo.Context) error {
	lang := i18n.Of(c.Request())
	return web.Render(c, http.StatusNotFound, web.Page(web.T(lang, "notfound.title"), lang, web.NotFound(lang)))
}

// setLang remembers the chosen language and goes back to the page the
// reader was on (only ever a page of this site).
func (u *UI) setLang(c echo.Context) error {
	lang := i18n.Parse(c.QueryParam("to"))
	c.SetCookie(&http.Cookie{Name: i18n.Cookie, Value: string(lang), Path: "/", MaxAge: 365 * 24 * 3600, SameSite: http.SameSiteLaxMode, HttpOnly: true})
	back := "/lesson/"
	if ref, err := url.Parse(c.Request().Referer()); err == nil && ref.Host == c.Request().Host {
		back = web.LocalPath(ref.Path)
	}
	return c.Redirect(http.StatusSeeOther, back)
}

// Stats reports the live views' open websockets and the slow ones closed
// so far.
func (u *UI) Stats() wshub.Stats { return u.hub.sockets.Stats() }
