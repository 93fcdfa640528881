package labhttp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/web/i18n"
)

// sendQueue is how many messages may wait for a slow browser; past that
// the browser is closed and reconnects, rather than hold memory.
const sendQueue = 16

// writeTimeout bounds one websocket write.
const writeTimeout = 10 * time.Second

// client is one browser websocket: a student following their own lab, or
// an instructor following the class.
type client struct {
	conn       *websocket.Conn
	queue      chan []byte
	ctx        context.Context
	cancel     context.CancelFunc
	user       string
	instructor bool
	lab        *labs.Lab
	lang       i18n.Lang
}

// hub sends each progress change to the student's own pages and a fresh
// class snapshot to every dashboard.
type hub struct {
	mu      sync.Mutex
	clients map[*client]struct{}
	closed  bool
	labs    []*labs.Lab
	// snapshot builds the dashboard's view of the class; rows draws its
	// table's rows in a language, as the dashboard page does.
	snapshot func(ctx context.Context) (*ClassView, error)
	rows     func(ctx context.Context, v *ClassView, lang i18n.Lang) string
	// dirty coalesces dashboard updates: one snapshot per burst.
	dirty chan struct{}
}

func newHub() *hub {
	return &hub{clients: map[*client]struct{}{}, labs: labs.All(), dirty: make(chan struct{}, 1)}
}

// accept upgrades to a websocket. The Origin check is websocket.Accept's
// default: only this host's pages may connect.
func (h *hub) accept(c echo.Context, cl *client) bool {
	conn, err := websocket.Accept(c.Response(), c.Request(), &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return false // Accept answered (403 for a foreign Origin)
	}
	conn.SetReadLimit(512)
	cl.conn, cl.queue = conn, make(chan []byte, sendQueue)
	cl.ctx, cl.cancel = context.WithCancel(context.WithoutCancel(c.Request().Context()))
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		conn.Close(websocket.StatusGoingAway, "server shutting down")
		return false
	}
	h.clients[cl] = struct{}{}
	h.mu.Unlock()
	return true
}

// serve writes queued messages until the browser goes or the hub closes.
func (h *hub) serve(cl *client) {
	defer func() {
		h.mu.Lock()
		delete(h.clients, cl)
		h.mu.Unlock()
	}()
	go func() {
		// Reading answers control frames and notices a closed tab.
		for {
			if _, _, err := cl.conn.Read(context.Background()); err != nil {
				cl.cancel()
				return
			}
		}
	}()
	for {
		select {
		case b := <-cl.queue:
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			err := cl.conn.Write(ctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				cl.conn.CloseNow()
				return
			}
		case <-cl.ctx.Done():
			cl.conn.Close(websocket.StatusNormalClosure, "")
			return
		}
	}
}

// send queues v without waiting; a browser that is too slow is closed
// (it reconnects and gets the current state).
func (cl *client) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	select {
	case cl.queue <- b:
	default:
		cl.cancel()
	}
}

// progressChanged tells the student's pages and, soon, the dashboards.
func (h *hub) progressChanged(p *labs.Progress) {
	h.mu.Lock()
	for cl := range h.clients {
		if !cl.instructor && cl.user == p.User && cl.lab != nil {
			cl.send(progressMsg{T: "lab", Lab: labView(h.labs, cl.lab, p, cl.lang)})
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

// refreshDashboards sends every dashboard a snapshot, its rows drawn in
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
	html := map[i18n.Lang]string{}
	for _, cl := range boards {
		if _, ok := html[cl.lang]; !ok {
			html[cl.lang] = h.rows(ctx, snap, cl.lang)
		}
		cl.send(classMsg{T: "class", Class: snap, HTML: html[cl.lang]})
	}
	if !snap.nextStuck.IsZero() {
		// A moment after, so that the student is stuck by then.
		return min(tick, max(snap.nextStuck.Sub(snap.Generated), 0)+10*time.Millisecond)
	}
	return tick
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for cl := range h.clients {
		cl.cancel()
	}
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
}
