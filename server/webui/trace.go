package webui

import (
	"time"

	"github.com/labstack/echo/v4"
)

// recentTraces is how many of the user's past requests a tracer replays
// when it (re)connects.
const recentTraces = 40

// traceStream is the pipeline tracer's websocket: the user's requests as
// their traces are published. since (RFC 3339) resumes after the last
// trace the view has, replaying what it missed from the user's recent ones.
func (u *UI) traceStream(c echo.Context) error {
	me := user(c)
	since, _ := time.Parse(time.RFC3339Nano, c.QueryParam("since"))
	cl, ok := u.accept(c, traceSocket)
	if !ok {
		return nil
	}
	for _, t := range u.Traces.Recent(me.Name, recentTraces) {
		if shownTrace(&t) && t.Time.After(since) {
			cl.Send(traceMsg{T: "trace", Replay: true, Trace: &t})
		}
	}
	u.hub.addTracer(me.Name, cl)
	u.detach(cl, nil)
	return nil
}
