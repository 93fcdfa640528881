package webui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
)

// sendQueue is how many messages may wait for a slow browser; past that
// the browser is closed (it resumes by resourceVersion) rather than let it
// hold memory or hold up whoever feeds it. A timeline lane's own events do
// not wait here (see sendAndWrite): a browser slow with those holds up its
// lane's watch, which the watch cache closes when it falls behind.
const sendQueue = 64

// Write buffers, one per connection and held for its life. A message
// larger than its connection's buffer goes out in two socket writes, not
// one, so a view's buffer fits the messages it sends most: the tracer's
// traces are a kilobyte or two; the other views send small events and
// lines.
const (
	smallWriteBuffer = 1024
	traceWriteBuffer = 4096
)

// writeTimeout bounds one websocket write (a variable for tests).
var writeTimeout = 10 * time.Second

// StatusTooSlow closes a client that cannot keep up: 1013, "try again
// later", after which the page reconnects at once from its last
// resourceVersion.
const StatusTooSlow = websocket.StatusTryAgainLater

// client is one browser websocket with a bounded send queue. No goroutine
// waits on an idle client's queue: a writer is started when a message is
// queued and ends when the queue is empty, so a thousand idle browsers
// hold a thousand readers and nothing more. Nor does an idle client hold
// a queue: it grows as messages wait, up to sendQueue, and is dropped
// once empty.
type client struct {
	conn *websocket.Conn
	// raw is the hijacked connection under conn, for write deadlines: a
	// deadline per write on the socket costs a timer update, where a
	// context with a timeout per message costs a context, a timer and a
	// callback registered with the websocket.
	raw  net.Conn
	user string
	// owner is the authenticated user whose websockets this one counts as.
	owner  string
	ctx    context.Context
	cancel context.CancelCauseFunc
	// closed is closed once the close frame is sent (or the connection
	// is gone).
	closed chan struct{}

	// mu guards queue and writing, which says a writer is running or
	// about to.
	mu      sync.Mutex
	queue   [][]byte
	writing bool
	// oneQueued backs the queue while it holds a single message, the usual
	// case on a fan-out, so that queueing one allocates nothing.
	oneQueued [1][]byte
	// writeMu is held by whoever writes, the writer or the close.
	writeMu sync.Mutex

	closeOnce sync.Once
	code      websocket.StatusCode
	reason    string
}

// errTooSlow ends a stream whose browser fell behind.
var errTooSlow = errors.New("too slow: the send queue is full")

// accept upgrades the request, checking that the page came from this host
// (the Origin check), and starts the writer. The returned context ends
// when the browser goes away or the client is closed.
func accept(c echo.Context, writeBuffer int) (*client, error) {
	hj := &smallBuffers{ResponseWriter: c.Response(), writeBuffer: writeBuffer}
	conn, err := websocket.Accept(hj, c.Request(), &websocket.AcceptOptions{
		// No OriginPatterns: only pages of this host may connect.
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(4096)
	// The connection is hijacked: it outlives the handler when a stream
	// runs on goroutines of its own (see detach), so its context must not
	// end when the handler returns. Nor does it keep the handler's values
	// (the upgrade request's trace and user): the API requests a view makes
	// get their own from the pipeline.
	ctx, cancel := context.WithCancelCause(context.Background())
	cl := &client{conn: conn, raw: hj.conn, ctx: ctx, cancel: cancel, closed: make(chan struct{}), code: websocket.StatusNormalClosure}
	return cl, nil
}

// send queues v for the browser without waiting; a full queue closes the
// client as too slow, and send reports false from then on.
func (cl *client) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return cl.sendRaw(b)
}

func (cl *client) sendRaw(b []byte) bool {
	start, ok := cl.enqueue(b)
	if start {
		go cl.flush()
	}
	return ok
}

// sendAndWrite is sendRaw for a sender with a goroutine of its own to
// spare, a timeline lane's watch: when no writer is running, the sender
// writes the queue itself instead of starting one, which on a fan-out to
// a thousand browsers saves a thousand goroutines per event. A browser
// slow to read then holds up that sender only, as a slow client holds up
// its own watch in the API.
func (cl *client) sendAndWrite(b []byte) bool {
	start, ok := cl.enqueue(b)
	if start {
		cl.flush()
	}
	return ok
}

// enqueue queues b, or closes the client as too slow if its queue is
// full. start says the caller is to run the writer.
func (cl *client) enqueue(b []byte) (start, ok bool) {
	if cl.ctx.Err() != nil {
		return false, false
	}
	cl.mu.Lock()
	if len(cl.queue) >= sendQueue {
		cl.mu.Unlock()
		cl.close(StatusTooSlow, "too slow: resume from your last resourceVersion")
		return false, false
	}
	if len(cl.queue) == 0 {
		cl.queue = cl.oneQueued[:0]
	}
	cl.queue = append(cl.queue, b)
	start = !cl.writing
	cl.writing = true
	cl.mu.Unlock()
	return start, true
}

// next takes the oldest queued message. With none left it lets the queue
// go and marks the writer stopped, in the same step, so that the next
// message queued starts a new one.
func (cl *client) next() ([]byte, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.queue) == 0 {
		// oneQueued may still hold a message sent after the queue had
		// moved to a larger array.
		cl.queue, cl.writing, cl.oneQueued[0] = nil, false, nil
		return nil, false
	}
	b := cl.queue[0]
	cl.queue[0] = nil
	cl.queue = cl.queue[1:]
	return b, true
}

func (cl *client) stopWriting() {
	cl.mu.Lock()
	cl.writing = false
	cl.mu.Unlock()
}

// close ends the client with a close code and reason the browser sees.
func (cl *client) close(code websocket.StatusCode, reason string) {
	cl.closeOnce.Do(func() {
		cl.code, cl.reason = code, reason
		if code == StatusTooSlow {
			cl.cancel(errTooSlow)
		} else {
			cl.cancel(context.Canceled)
		}
	})
}

// flush writes queued messages until the queue is empty or the client
// ends; what is left then is the close's to send.
func (cl *client) flush() {
	cl.writeMu.Lock()
	defer cl.writeMu.Unlock()
	for cl.ctx.Err() == nil {
		b, ok := cl.next()
		if !ok {
			return
		}
		if !cl.write(b, writeTimeout) {
			cl.close(websocket.StatusGoingAway, "write failed")
			cl.conn.CloseNow()
			break
		}
	}
	cl.stopWriting()
}

// write sends one message within timeout. Not with cl.ctx: cancelling a
// write's context tears the connection down, and a finished stream still
// flushes its last messages.
func (cl *client) write(b []byte, timeout time.Duration) bool {
	if cl.raw.SetWriteDeadline(time.Now().Add(timeout)) != nil {
		return false
	}
	err := cl.conn.Write(context.Background(), websocket.MessageText, b)
	// No deadline outlives its write: the websocket writes control frames
	// on its own (a pong, the reply to the browser's close), and a
	// deadline long past would fail them.
	cl.raw.SetWriteDeadline(time.Time{})
	return err == nil
}

// start serves the client: a reader (which answers control frames and
// notices at once a browser that closed) with onMessage for each message
// the browser sends (nil: it sends nothing), and, once the client's
// context ends, the close with its code and reason, then onClosed.
func (cl *client) start(onMessage func([]byte), onClosed func()) {
	go cl.read(onMessage)
	context.AfterFunc(cl.ctx, func() {
		cl.writeMu.Lock()
		// Flush what is queued, unless the client is too slow for it.
		if cl.code != StatusTooSlow {
			cl.drain()
		}
		cl.conn.Close(cl.code, cl.reason)
		cl.writeMu.Unlock()
		close(cl.closed)
		if onClosed != nil {
			onClosed()
		}
	})
}

func (cl *client) drain() {
	for {
		b, ok := cl.next()
		if !ok || !cl.write(b, time.Second) {
			return
		}
	}
}

func (cl *client) read(onMessage func([]byte)) {
	for {
		// Reads end when the connection closes; a cancelled context would
		// tear it down before the close frame is sent.
		_, b, err := cl.conn.Read(context.Background())
		if err != nil {
			cl.close(websocket.StatusNormalClosure, "")
			return
		}
		if onMessage != nil {
			onMessage(b)
		}
	}
}

// finish ends the client normally once the stream has nothing more.
func (cl *client) finish() { cl.close(websocket.StatusNormalClosure, "done") }

// isUpgrade reports whether r asks for a websocket.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != ""
}

// accept upgrades the request to a websocket registered with the UI, so
// that shutdown can end it.
func (u *UI) accept(c echo.Context, writeBuffer int) (*client, bool) {
	// The cap counts the authenticated user's websockets, not the name it
	// impersonates: each service account a student may act as must not
	// bring ten more.
	owner, _ := pipeline.AuthenticatedFromContext(c.Request().Context())
	if !u.enterWebsocket(owner.Name) {
		// Answered by the server's error handler, as a Status with Retry-After.
		c.Error(apierrors.NewTooManyRequests(fmt.Sprintf("too many live views open: at most %d per user; close another tab of the lab", u.Websockets.Limit()), 5))
		return nil, false
	}
	cl, err := accept(c, writeBuffer)
	if err != nil {
		// Accept has answered already (403 for a foreign Origin, 426...).
		u.leaveWebsocket(owner.Name)
		return nil, false
	}
	cl.user, cl.owner = user(c).Name, owner.Name
	if !u.hub.add(cl) {
		u.leaveWebsocket(owner.Name)
		cl.conn.Close(websocket.StatusGoingAway, "server shutting down")
		return nil, false
	}
	return cl, true
}

// detach serves the client and lets the handler return: the goroutine
// that ran the handler, whose stack the whole middleware chain grew, ends
// instead of waiting for the life of the connection. That was most of an
// idle connection's memory.
func (u *UI) detach(cl *client, onMessage func([]byte)) {
	cl.start(onMessage, func() {
		u.hub.remove(cl)
		u.leaveWebsocket(cl.owner)
	})
}

func (u *UI) enterWebsocket(owner string) bool {
	return u.Websockets == nil || u.Websockets.Enter(owner)
}

func (u *UI) leaveWebsocket(owner string) {
	if u.Websockets != nil {
		u.Websockets.Leave(owner)
	}
}

// serve serves the client until it ends and forgets it.
func (u *UI) serve(cl *client, onMessage func([]byte)) {
	u.detach(cl, onMessage)
	<-cl.closed
}

// smallBuffers hands the websocket smaller buffers than net/http's 4 KB
// pair: browsers send nearly nothing, most views send small messages, and
// on a thousand idle connections the buffers are most of the memory. The
// write buffer is sized by the view. It keeps the hijacked connection, for
// write deadlines.
type smallBuffers struct {
	http.ResponseWriter
	writeBuffer int
	conn        net.Conn
}

// Hijack implements http.Hijacker.
func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = conn
	// Keep whatever the browser sent after its handshake.
	var r io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		r = io.MultiReader(bytes.NewReader(bytes.Clone(b)), conn)
	}
	return conn, bufio.NewReadWriter(bufio.NewReaderSize(r, 512), bufio.NewWriterSize(conn, w.writeBuffer)), nil
}
