package labhttp

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/server/wshub"
	"github.com/kubelab/kubelab/web/i18n"
)

// labSocket sizes the labs' websockets: a browser may wait for 16
// messages (each is the whole current state, so a browser past that loses
// nothing by reconnecting), sends nearly nothing, and a dashboard's
// snapshot carries its table's rows.
var labSocket = wshub.Options{Queue: 16, ReadLimit: 512, WriteBuffer: 4096}

// client is one browser websocket: a student following their own lab, or
// an instructor following the class.
type client struct {
	*wshub.Client
	user       string
	instructor bool
	lab        *labs.Lab
	lang       i18n.Lang
}

// hub sends each progress change to the student's own pages and a fresh
// class snapshot to every dashboard. Every client is one of sockets,
// which shutdown ends.
type hub struct {
	sockets *wshub.Hub
	mu      sync.Mutex
	clients map[*client]struct{}
	labs    []*labs.Lab
	// snapshot builds the dashboard's view of the class; draw draws its
	// table's rows and notice in a language, as the dashboard page does.
	snapshot func(ctx context.Context) (*ClassView, error)
	draw     func(ctx context.Context, v *ClassView, lang i18n.Lang) dashboardHTML
	// dirty coalesces dashboard updates: one snapshot per burst.
	dirty chan struct{}
}

func newHub(counter wshub.Counter) *hub {
	return &hub{sockets: wshub.New(counter), clients: map[*client]struct{}{}, labs: labs.All(), dirty: make(chan struct{}, 1)}
}

// accept upgrades to a websocket, counted against the user's cap, and
// registers cl for the hub's messages; false when the request has been
// answered. The caller sends the current state, then calls serve.
func (h *hub) accept(c echo.Context, cl *client) bool {
	sock, ok := h.sockets.Accept(c, labSocket)
	if !ok {
		return false
	}
	cl.Client = sock
	h.mu.Lock()
	h.clients[cl] = struct{}{}
	h.mu.Unlock()
	return true
}

// serve serves cl on goroutines of its own until the browser goes or the
// hub closes, then forgets it.
func (h *hub) serve(cl *client) {
	h.sockets.Serve(cl.Client, nil, func() {
		h.mu.Lock()
		delete(h.clients, cl)
		h.mu.Unlock()
	})
}

// progressChanged tells the student's pages and, soon, the dashboards.
func (h *hub) progressChanged(p *labs.Progress) {
	h.mu.Lock()
	for cl := range h.clients {
		if !cl.instructor && cl.user == p.User && cl.lab != nil {
			cl.Send(progressMsg{T: "lab", Lab: labView(h.labs, cl.lab, p, cl.lang)})
		}
	}
	h.mu.Unlock()
	h.classChanged()
}

// classChanged asks for a fresh snapshot on every dashboard, soon: a burst
// of changes makes one.
func (h *hub) classChanged() {
	select {
	case h.dirty <- struct{}{}:
	default:
	}
}

// runDashboards sends snapshots when the class changed, every tick (so
// that relative times move on), and when the next student becomes stuck,
// so that "stuck" appears on time without anyone's progress changing.
func (h *hub) runDashboards(ctx context.Context, tick time.Duration, log func(error)) {
	t := time.NewTimer(tick)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.dirty:
			t.Stop()
			// A busy class changes etcd all the time: one snapshot per
			// dashboardGap at most, each with every change before it.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(last.Add(dashboardGap))):
			}
		case <-t.C:
		}
		last = time.Now()
		t.Reset(h.refreshDashboards(ctx, tick, log))
	}
}

// refreshDashboards sends every dashboard a snapshot, its parts drawn in
// the dashboard's language, and says how long until the next is due.
func (h *hub) refreshDashboards(ctx context.Context, tick time.Duration, log func(error)) time.Duration {
	h.mu.Lock()
	var boards []*client
	for cl := range h.clients {
		if cl.instructor {
			boards = append(boards, cl)
		}
	}
	h.mu.Unlock()
	if len(boards) == 0 {
		return tick
	}
	snap, err := h.snapshot(ctx)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			log(err)
		}
		return tick
	}
	html := map[i18n.Lang]dashboardHTML{}
	for _, cl := range boards {
		if _, ok := html[cl.lang]; !ok {
			html[cl.lang] = h.draw(ctx, snap, cl.lang)
		}
		cl.Send(newClassMsg(snap, html[cl.lang]))
	}
	if !snap.nextStuck.IsZero() {
		// A moment after, so that the student is stuck by then.
		return min(tick, max(snap.nextStuck.Sub(snap.Generated), 0)+10*time.Millisecond)
	}
	return tick
}

type progressMsg struct {
	T   string  `json:"t"`
	Lab LabView `json:"lab"`
}

// classMsg is a dashboard's snapshot: the class as data, and its table's
// rows as the page draws them (escaped by templ), so that the live table
// and the page's first one are drawn by the same code.
type classMsg struct {
	T     string     `json:"t"`
	Class *ClassView `json:"class"`
	HTML  string     `json:"html"`
	// Notice is the notice above the table, empty when there is none.
	Notice string `json:"notice"`
}

func newClassMsg(v *ClassView, html dashboardHTML) classMsg {
	return classMsg{T: "class", Class: v, HTML: html.rows, Notice: html.notice}
}
