package webui

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/server/wshub"
)

// The live views' websockets. A browser may wait for 64 messages; past
// that it is closed (it resumes by resourceVersion) rather than let it
// hold memory or hold up whoever feeds it. A timeline lane's own events
// do not wait there (see wshub.Client.SendAndWrite): a browser slow with
// those holds up its lane's watch, which the watch cache closes when it
// falls behind.
//
// The write buffer fits the messages a view sends most: the tracer's
// traces are a kilobyte or two; the other views send small events and
// lines.
var (
	smallSocket = wshub.Options{Queue: 64, ReadLimit: 4096, WriteBuffer: 1024}
	traceSocket = wshub.Options{Queue: 64, ReadLimit: 4096, WriteBuffer: 4096}
)

// isUpgrade reports whether r asks for a websocket.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != ""
}

// accept upgrades the request to a websocket of the UI's hub, so that
// shutdown can end it; false when the request has been answered.
func (u *UI) accept(c echo.Context, opts wshub.Options) (*wshub.Client, bool) {
	return u.hub.sockets.Accept(c, opts)
}

// detach serves the client on goroutines of its own and lets the handler
// return (see wshub.Hub.Serve).
func (u *UI) detach(cl *wshub.Client, onMessage func([]byte)) {
	u.hub.sockets.Serve(cl, onMessage, func() { u.hub.remove(cl) })
}

// serve serves the client until it ends and forgets it.
func (u *UI) serve(cl *wshub.Client, onMessage func([]byte)) {
	u.detach(cl, onMessage)
	<-cl.Done()
}
