package wshub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
)

// Counter counts open websockets per user against a cap. The server shares
// one between every page that opens websockets: the cap is on the user,
// whichever page opened them.
type Counter interface {
	// Enter counts one more websocket of user, or is false at the cap.
	Enter(user string) bool
	// Leave gives back a place Enter counted.
	Leave(user string)
	// Limit is the cap, for the refusal's message.
	Limit() int
}

// TooMany is the refusal of a websocket past the user's cap, a 429 Status
// with Retry-After: the live views', the labs' and the terminal's.
func TooMany(counter Counter) error {
	return apierrors.NewTooManyRequests(fmt.Sprintf("too many live views open: at most %d per user; close another tab of the lab", counter.Limit()), 5)
}

// Options size one kind of websocket to the messages it carries.
type Options struct {
	// Queue is how many messages may wait for a slow browser; past that
	// the browser is closed rather than let it hold memory or hold up
	// whoever feeds it.
	Queue int
	// ReadLimit is the largest message the browser may send.
	ReadLimit int64
	// WriteBuffer is the connection's write buffer, held for its life: a
	// message larger than it goes out in two socket writes, not one.
	WriteBuffer int
}

// Hub knows every open client, so that shutdown can end them; what each
// page sends, and to whom, is the page's own.
type Hub struct {
	// counter, if not nil, caps each user's websockets.
	counter Counter

	mu     sync.Mutex
	all    map[*Client]struct{}
	closed bool
	// tooSlow counts clients closed for not keeping up.
	tooSlow atomic.Uint64
}

// New returns a hub whose websockets count against counter (nil: no cap).
func New(counter Counter) *Hub {
	return &Hub{counter: counter, all: map[*Client]struct{}{}}
}

// Accept upgrades the request to a websocket registered with the hub. The
// cap counts the authenticated user's websockets, not the name it
// impersonates: each service account a student may act as must not bring
// ten more. Only pages of this host may connect (the Origin check). When
// it returns false the request has been answered: 429 at the cap, 403 for
// a foreign Origin, a close frame when the hub is closing. The caller
// must Serve a client it was given.
func (h *Hub) Accept(c echo.Context, opts Options) (*Client, bool) {
	owner, _ := pipeline.AuthenticatedFromContext(c.Request().Context())
	if h.counter != nil && !h.counter.Enter(owner.Name) {
		// Answered by the server's error handler, as a Status with Retry-After.
		c.Error(TooMany(h.counter))
		return nil, false
	}
	hj := &smallBuffers{ResponseWriter: c.Response(), writeBuffer: opts.WriteBuffer}
	conn, err := websocket.Accept(hj, c.Request(), &websocket.AcceptOptions{
		// No OriginPatterns: only pages of this host may connect.
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		// Accept has answered already (403 for a foreign Origin, 426...).
		h.leave(owner.Name)
		return nil, false
	}
	conn.SetReadLimit(opts.ReadLimit)
	// The connection is hijacked: it outlives the handler when a stream
	// runs on goroutines of its own (see Serve), so its context must not
	// end when the handler returns. Nor does it keep the handler's values
	// (the upgrade request's trace and user): the API requests a view makes
	// get their own from the pipeline.
	ctx, cancel := context.WithCancelCause(context.Background())
	cl := &Client{conn: conn, raw: hj.conn, owner: owner.Name, queueLimit: opts.Queue,
		ctx: ctx, cancel: cancel, closed: make(chan struct{}), code: websocket.StatusNormalClosure}
	if !h.add(cl) {
		h.leave(owner.Name)
		cancel(context.Canceled)
		conn.Close(websocket.StatusGoingAway, "server shutting down")
		return nil, false
	}
	return cl, true
}

// Serve serves the client on goroutines of its own and lets the handler
// return: the goroutine that ran the handler, whose stack the whole
// middleware chain grew, ends instead of waiting for the life of the
// connection. That was most of an idle connection's memory. onMessage
// gets each message the browser sends (nil: it sends nothing); once the
// client has ended and left the hub, onClosed (if not nil) runs, and then
// Done is closed.
func (h *Hub) Serve(cl *Client, onMessage func([]byte), onClosed func()) {
	cl.start(onMessage, func() {
		h.remove(cl)
		h.leave(cl.owner)
		if onClosed != nil {
			onClosed()
		}
	})
}

// add registers a client until it ends; false if the hub is closing.
func (h *Hub) add(cl *Client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.all[cl] = struct{}{}
	return true
}

func (h *Hub) remove(cl *Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.all[cl]; ok && cl.code == StatusTooSlow {
		h.tooSlow.Add(1)
	}
	delete(h.all, cl)
}

func (h *Hub) leave(owner string) {
	if h.counter != nil {
		h.counter.Leave(owner)
	}
}

// CloseAll ends every client, and refuses new ones: the server is
// stopping. Hijacked websocket connections are not ended by the HTTP
// server's shutdown.
func (h *Hub) CloseAll() {
	h.mu.Lock()
	h.closed = true
	clients := make([]*Client, 0, len(h.all))
	for cl := range h.all {
		clients = append(clients, cl)
	}
	h.mu.Unlock()
	for _, cl := range clients {
		cl.Close(websocket.StatusGoingAway, "server shutting down")
	}
}

// Stats is what the hub reports about its clients.
type Stats struct {
	// Clients is how many websockets are open.
	Clients int
	// TooSlow counts clients closed for not keeping up.
	TooSlow uint64
}

// Stats reports the hub's clients.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	n := len(h.all)
	h.mu.Unlock()
	return Stats{Clients: n, TooSlow: h.tooSlow.Load()}
}
