package webui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/server/handoff"
)

// podRef is one pod of a list, for the timeline.
type podRef struct {
	Name string `json:"name"`
	RV   string `json:"rv"`
}

type listMsg struct {
	T       string   `json:"t"`
	RV      int64    `json:"rv"`
	Relist  bool     `json:"relist,omitempty"`
	Request string   `json:"request"`
	Items   []podRef `json:"items"`
	// Streamed: the state came as a watch's initial events, ended by the
	// initial-events-end bookmark (client-go 1.35+'s streaming list).
	Streamed bool `json:"streamed,omitempty"`
	horizons
}

type watchingMsg struct {
	T       string `json:"t"`
	Request string `json:"request"`
	RV      int64  `json:"rv"`
}

type eventMsg struct {
	T    string `json:"t"`
	Type string `json:"type"`
	RV   int64  `json:"rv"`
	Name string `json:"name,omitempty"`
}

// timelineEvent is a watch line as the timeline needs it, with the
// message for the browser already encoded.
type timelineEvent struct {
	ev  wireEvent
	rv  int64
	msg []byte
}

// eventCache translates watch lines into timeline messages once for all
// the browsers that get the same event: the API writes one shared line to
// every watcher, and parsing it a thousand times would be most of the cost
// of a fan-out.
type eventCache struct {
	mu      sync.RWMutex
	entries map[string]*timelineEvent
}

const eventCacheSize = 512

func (c *eventCache) translate(line []byte) (*timelineEvent, error) {
	c.mu.RLock()
	e, ok := c.entries[string(line)]
	c.mu.RUnlock()
	if ok {
		return e, nil
	}
	e = &timelineEvent{}
	if err := json.Unmarshal(line, &e.ev); err != nil {
		return nil, err
	}
	e.rv, _ = strconv.ParseInt(e.ev.Object.Metadata.ResourceVersion, 10, 64)
	e.msg, _ = json.Marshal(eventMsg{T: "event", Type: e.ev.Type, RV: e.rv, Name: e.ev.Object.Metadata.Name})
	if e.ev.Type == "ERROR" {
		return e, nil // per watcher; not worth keeping
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= eventCacheSize {
		c.entries = make(map[string]*timelineEvent, eventCacheSize)
	}
	c.entries[string(line)] = e
	c.mu.Unlock()
	return e, nil
}

type goneMsg struct {
	T       string `json:"t"`
	Code    int32  `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	RV      int64  `json:"rv"`
}

// wireEvent is the part of a watch event (or a Status) the views use.
type wireEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Code    int32  `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"object"`
}

// apiStatus is a Status error body.
type apiStatus struct {
	Code    int32  `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func statusError(code int, body []byte) error {
	var st apiStatus
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return fmt.Errorf("%d %s: %s", code, st.Reason, st.Message)
	}
	return fmt.Errorf("%d %s", code, http.StatusText(code))
}

// watchStream is one lane of the watch timeline: a Reflector drawn. It
// lists the user's pods (unless it resumes from rv), watches from the
// list's resourceVersion, and on 410 Gone relists and watches again, each
// step a real request through the API.
func (u *UI) watchStream(c echo.Context) error {
	ns := namespace(c)
	rv, _ := strconv.ParseInt(c.QueryParam("rv"), 10, 64)
	from := callerOf(c.Request())
	cl, ok := u.accept(c, smallWriteBuffer)
	if !ok {
		return nil
	}
	u.hub.addTimeline(cl)
	// mode=stream starts (and restarts, after a 410) the way client-go
	// 1.35+'s Reflector does: a watch with sendInitialEvents instead of a
	// list. Otherwise a list, then a watch from its resourceVersion.
	streaming := c.QueryParam("mode") == "stream"
	go (&lane{u: u, cl: cl, from: from, ns: ns, streaming: streaming}).follow(max(rv, 0), false)
	u.detach(cl, nil)
	return nil
}

// lane is one timeline lane: a browser's reflector over its namespace's
// pods.
type lane struct {
	u         *UI
	cl        *client
	from      caller
	ns        string
	streaming bool
}

// follow lists (unless it resumes from rv) and watches, and relists on
// 410 Gone, for as long as the browser is there. When the API takes a
// watch's stream off this goroutine (package handoff), the rest of the
// loop goes with it: this goroutine, whose stack the requests through the
// router grew, ends instead of waiting for the watch.
func (l *lane) follow(rv int64, relist bool) {
	for l.cl.ctx.Err() == nil {
		if rv == 0 && l.streaming {
			w := l.newStreamingWatch(relist)
			if w.serve() {
				return
			}
			var ok bool
			if rv, relist, ok = w.end(); !ok {
				return
			}
			continue
		}
		if rv == 0 {
			var err error
			if rv, err = l.u.listPods(l.cl, l.from, l.ns, relist); err != nil {
				l.cl.close(websocket.StatusPolicyViolation, trimReason(err.Error()))
				return
			}
		}
		w := l.newWatch(rv)
		if w.serve() {
			return
		}
		var ok bool
		if rv, relist, ok = w.end(); !ok {
			return
		}
	}
}

// trimReason keeps a close reason within the websocket limit of 123 bytes.
func trimReason(s string) string {
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func (u *UI) listPods(cl *client, from caller, ns string, relist bool) (int64, error) {
	target := "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods"
	rec := u.do(apiRequest(cl.ctx, from, http.MethodGet, target, "", nil))
	if rec.Code != http.StatusOK {
		return 0, statusError(rec.Code, rec.Body.Bytes())
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []struct {
			Metadata struct {
				Name            string `json:"name"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		return 0, err
	}
	rv, err := strconv.ParseInt(list.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("list resourceVersion %q: %w", list.Metadata.ResourceVersion, err)
	}
	items := make([]podRef, 0, len(list.Items))
	for _, it := range list.Items {
		items = append(items, podRef{Name: it.Metadata.Name, RV: it.Metadata.ResourceVersion})
	}
	cl.send(listMsg{T: "list", RV: rv, Relist: relist, Request: "GET " + target, Items: items,
		horizons: u.horizonsNow(cl.ctx)})
	return rv, nil
}

// laneWatch is one watch of a lane, from rv until it ends.
type laneWatch struct {
	*lane
	target   string
	rv, last int64
	code     int
	failed   []byte // the body of a watch refused with a Status
	gone     bool
	err      error
	out      *lineWriter
	// streaming: the watch's initial events are the state, gathered in
	// initial until the initial-events-end bookmark; relist says whether
	// it stands for a relist after a 410.
	streaming, relist bool
	initial           []podRef
}

// newStreamingWatch is the streaming list: one watch whose initial events
// are the state, ended by a BOOKMARK annotated k8s.io/initial-events-end
// at the resourceVersion the state is at; changes follow on the same
// watch.
func (l *lane) newStreamingWatch(relist bool) *laneWatch {
	w := &laneWatch{lane: l, streaming: true, relist: relist,
		target: "/api/v1/namespaces/" + url.PathEscape(l.ns) + "/pods?watch=1&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true"}
	w.out = newLineWriter(w.onHeader, w.onLine)
	return w
}

func (l *lane) newWatch(rv int64) *laneWatch {
	w := &laneWatch{lane: l, rv: rv, last: rv,
		target: "/api/v1/namespaces/" + url.PathEscape(l.ns) + "/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + strconv.FormatInt(rv, 10)}
	w.out = newLineWriter(w.onHeader, w.onLine)
	return w
}

// serve serves the watch through the router, as a request from the
// browser. It reports whether the API took the stream to a goroutine of
// its own: then the lane resumes from there when the watch ends.
func (w *laneWatch) serve() bool {
	ctx, h := handoff.Offer(w.cl.ctx, w.resume)
	w.u.router.ServeHTTP(w.out, apiRequest(ctx, w.from, http.MethodGet, w.target, "", nil))
	return h.Served()
}

func (w *laneWatch) resume() {
	if rv, relist, ok := w.end(); ok {
		go w.follow(rv, relist)
	}
}

// end says how the lane goes on after the watch: from which
// resourceVersion (0: list first), whether that list is a relist, or not
// at all (ok false: the browser left, or the lane was closed with the
// watch's error).
func (w *laneWatch) end() (rv int64, relist, ok bool) {
	w.out.rest()
	err := w.err
	if w.code != http.StatusOK && w.code != 0 {
		err = statusError(w.code, w.failed)
	}
	switch {
	case w.cl.ctx.Err() != nil:
		return 0, false, false
	case err != nil:
		w.cl.close(websocket.StatusPolicyViolation, trimReason(err.Error()))
		return 0, false, false
	case w.gone:
		return 0, true, true
	default:
		return w.last, false, true // the watch timed out: resume where it was
	}
}

func (w *laneWatch) onHeader(code int, _ http.Header) {
	w.code = code
	if code == http.StatusOK {
		w.cl.send(watchingMsg{T: "watching", Request: "GET " + w.target, RV: w.rv})
	}
}

// onLine forwards one watch event to the browser; false ends the watch.
func (w *laneWatch) onLine(line []byte) bool {
	if w.code != http.StatusOK {
		w.failed = append(w.failed, line...)
		return true
	}
	te, err := w.u.events.translate(line)
	if err != nil {
		return false
	}
	ev := &te.ev
	if ev.Type == "ERROR" {
		if ev.Object.Code == http.StatusGone {
			w.gone = true
			w.cl.send(goneMsg{T: "gone", Code: ev.Object.Code, Reason: ev.Object.Reason, Message: ev.Object.Message, RV: w.rv})
		} else {
			w.err = fmt.Errorf("watch error %d: %s", ev.Object.Code, ev.Object.Message)
		}
		return false
	}
	if te.rv > 0 {
		w.last = te.rv
	}
	if w.streaming {
		// The initial events draw as a list does, once their end is known.
		switch {
		case ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true":
			w.streaming = false
			w.cl.send(listMsg{T: "list", RV: te.rv, Relist: w.relist, Streamed: true, Request: "WATCH " + w.target,
				Items: w.initial, horizons: w.u.horizonsNow(w.cl.ctx)})
			return true
		case ev.Type == "ADDED":
			w.initial = append(w.initial, podRef{Name: ev.Object.Metadata.Name, RV: ev.Object.Metadata.ResourceVersion})
			return true
		}
	}
	return w.cl.sendAndWrite(te.msg)
}

// compactGate allows one compaction at a time and at most one a second:
// a compaction is etcd-wide.
type compactGate struct {
	mu   sync.Mutex
	last time.Time
}

// compactions names "Compact now" in its Status errors.
var compactions = schema.GroupResource{Group: "kubelab.io", Resource: "compactions"}

// compact compacts etcd at its current revision, for the timeline's
// "compact now". As with kube-apiserver's compactor, the watch cache's
// window does not move: watches go on being served from it. What gets
// etcd's 410 is what reads etcd below the revision: an exact list, a
// continue token, a watch with the cache off.
func (u *UI) compact(c echo.Context) error {
	// Compaction is etcd-wide: in a class it would make every student's
	// older watches fail, so it is the instructor's.
	if !u.mayCompact(c) {
		return apierrors.NewForbidden(compactions, "",
			errors.New("in a class only instructors and admins compact etcd, which the whole class shares: ask your instructor to press Compact now (etcd is also compacted every --compaction-interval)"))
	}
	// Locally, it is for whoever may watch pods in their namespace, as
	// RBAC says. (The front door has refused a cross-site POST already.)
	if !u.Classroom && !u.allowed(c, "/api/v1/namespaces/"+url.PathEscape(namespace(c))+"/pods?limit=1") {
		return apierrors.NewForbidden(compactions, "", errors.New("compacting etcd needs permission to list pods in your namespace"))
	}
	u.gate.mu.Lock()
	defer u.gate.mu.Unlock()
	if time.Since(u.gate.last) < time.Second {
		return apierrors.NewTooManyRequests("etcd was compacted less than a second ago", 1)
	}
	rev, err := u.Compactor.CompactNow(c.Request().Context())
	if err != nil {
		u.Logger.Warn("compact now", "error", err)
		return apierrors.NewInternalError(errors.New("compaction failed; the server log has the details"))
	}
	u.gate.last = time.Now()
	u.Logger.Info("compacted etcd from the web UI", "revision", rev, "user", user(c).Name)
	return c.JSON(http.StatusOK, map[string]int64{"revision": rev})
}
