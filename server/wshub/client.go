// Package wshub serves browser websockets: the upgrade (this host's pages
// only, and a cap on each user's open websockets), a client with a bounded
// send queue and a writer that runs only while messages wait, and a hub
// that knows every open client so that shutdown can end them. The live
// views and the labs' pages each fan their own messages out over it.
package wshub

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// writeTimeout bounds one websocket write (a variable for tests).
var writeTimeout = 10 * time.Second

// StatusTooSlow closes a client that cannot keep up: 1013, "try again
// later", after which the page reconnects at once (from its last
// resourceVersion, or to the current state).
const StatusTooSlow = websocket.StatusTryAgainLater

// ErrTooSlow is the cause of a client's context when its browser fell
// behind.
var ErrTooSlow = errors.New("too slow: the send queue is full")

// Client is one browser websocket with a bounded send queue. No goroutine
// waits on an idle client's queue: a writer is started when a message is
// queued and ends when the queue is empty, so a thousand idle browsers
// hold a thousand readers and nothing more. Nor does an idle client hold
// a queue: it grows as messages wait, up to its limit, and is dropped
// once empty.
type Client struct {
	conn *websocket.Conn
	// raw is the hijacked connection under conn, for write deadlines: a
	// deadline per write on the socket costs a timer update, where a
	// context with a timeout per message costs a context, a timer and a
	// callback registered with the websocket.
	raw net.Conn
	// owner is the authenticated user whose websockets this one counts as.
	owner string
	// queueLimit is how many messages may wait before the client is
	// closed as too slow.
	queueLimit int
	ctx        context.Context
	cancel     context.CancelCauseFunc
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

// Context ends when the browser goes away or the client is closed; its
// cause is ErrTooSlow for a browser that fell behind.
func (cl *Client) Context() context.Context { return cl.ctx }

// Done is closed once the client has sent its close (or lost its
// connection) and left the hub.
func (cl *Client) Done() <-chan struct{} { return cl.closed }

// Send queues v, encoded as JSON, for the browser without waiting; a full
// queue closes the client as too slow, and Send reports false from then on.
func (cl *Client) Send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return cl.SendRaw(b)
}

// SendRaw is Send for a message encoded already, such as one encoded once
// for many clients.
func (cl *Client) SendRaw(b []byte) bool {
	start, ok := cl.enqueue(b)
	if start {
		go cl.flush()
	}
	return ok
}

// SendAndWrite is SendRaw for a sender with a goroutine of its own to
// spare, a timeline lane's watch: when no writer is running, the sender
// writes the queue itself instead of starting one, which on a fan-out to
// a thousand browsers saves a thousand goroutines per event. A browser
// slow to read then holds up that sender only, as a slow client holds up
// its own watch in the API.
func (cl *Client) SendAndWrite(b []byte) bool {
	start, ok := cl.enqueue(b)
	if start {
		cl.flush()
	}
	return ok
}

// enqueue queues b, or closes the client as too slow if its queue is
// full. start says the caller is to run the writer.
func (cl *Client) enqueue(b []byte) (start, ok bool) {
	if cl.ctx.Err() != nil {
		return false, false
	}
	cl.mu.Lock()
	if len(cl.queue) >= cl.queueLimit {
		cl.mu.Unlock()
		cl.Close(StatusTooSlow, "too slow: resume from your last resourceVersion")
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
func (cl *Client) next() ([]byte, bool) {
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

func (cl *Client) stopWriting() {
	cl.mu.Lock()
	cl.writing = false
	cl.mu.Unlock()
}

// Close ends the client with a close code and reason the browser sees;
// what is queued is sent first, unless the client is too slow for it.
func (cl *Client) Close(code websocket.StatusCode, reason string) {
	cl.closeOnce.Do(func() {
		cl.code, cl.reason = code, reason
		if code == StatusTooSlow {
			cl.cancel(ErrTooSlow)
		} else {
			cl.cancel(context.Canceled)
		}
	})
}

// Finish ends the client normally once the stream has nothing more.
func (cl *Client) Finish() { cl.Close(websocket.StatusNormalClosure, "done") }

// flush writes queued messages until the queue is empty or the client
// ends; what is left then is the close's to send.
func (cl *Client) flush() {
	cl.writeMu.Lock()
	defer cl.writeMu.Unlock()
	for cl.ctx.Err() == nil {
		b, ok := cl.next()
		if !ok {
			return
		}
		if !cl.write(b, writeTimeout) {
			cl.Close(websocket.StatusGoingAway, "write failed")
			cl.conn.CloseNow()
			break
		}
	}
	cl.stopWriting()
}

// write sends one message within timeout. Not with cl.ctx: cancelling a
// write's context tears the connection down, and a finished stream still
// flushes its last messages.
func (cl *Client) write(b []byte, timeout time.Duration) bool {
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
func (cl *Client) start(onMessage func([]byte), onClosed func()) {
	go cl.read(onMessage)
	context.AfterFunc(cl.ctx, func() {
		cl.writeMu.Lock()
		// Flush what is queued, unless the client is too slow for it.
		if cl.code != StatusTooSlow {
			cl.drain()
		}
		cl.conn.Close(cl.code, cl.reason)
		cl.writeMu.Unlock()
		onClosed()
		close(cl.closed)
	})
}

func (cl *Client) drain() {
	for {
		b, ok := cl.next()
		if !ok || !cl.write(b, time.Second) {
			return
		}
	}
}

func (cl *Client) read(onMessage func([]byte)) {
	for {
		// Reads end when the connection closes; a cancelled context would
		// tear it down before the close frame is sent.
		_, b, err := cl.conn.Read(context.Background())
		if err != nil {
			cl.Close(websocket.StatusNormalClosure, "")
			return
		}
		if onMessage != nil {
			onMessage(b)
		}
	}
}
