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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage"
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

type goneMsg struct {
	T       string `json:"t"`
	Code    int32  `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	RV      int64  `json:"rv"`
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
// step a call to the registry's pods store as the browser's user, so RBAC
// decides what the lane shows.
func (u *UI) watchStream(c echo.Context) error {
	ns := namespace(c)
	rv, _ := strconv.ParseInt(c.QueryParam("rv"), 10, 64)
	from := callerOf(c.Request())
	cl, ok := u.accept(c, smallSocket)
	if !ok {
		return nil
	}
	u.hub.addTimeline(cl)
	// mode=stream starts (and restarts, after a 410) the way client-go
	// 1.35+'s Reflector does: a watch with sendInitialEvents instead of a
	// list. Otherwise a list, then a watch from its resourceVersion.
	streaming := c.QueryParam("mode") == "stream"
	go (&lane{u: u, cl: cl, from: from, ns: ns, streaming: streaming}).follow(max(rv, 0))
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

// laneWatchTimeout is how long one watch of a lane lasts before the lane
// resumes from its last resourceVersion, as kube-apiserver ends a watch
// after --min-request-timeout.
const laneWatchTimeout = 30 * time.Minute

// follow lists (unless it resumes from rv) and watches, and relists on
// 410 Gone, for as long as the browser is there.
func (l *lane) follow(rv int64) {
	relist := false
	for l.cl.Context().Err() == nil {
		var w *laneWatch
		switch {
		case rv == 0 && l.streaming:
			w = l.newStreamingWatch(relist)
		case rv == 0:
			var err error
			if rv, err = l.u.listPods(l.cl, l.from, l.ns, relist); err != nil {
				l.cl.Close(websocket.StatusPolicyViolation, trimReason(err.Error()))
				return
			}
			w = l.newWatch(rv)
		default:
			w = l.newWatch(rv)
		}
		var ok bool
		if rv, relist, ok = w.serve(); !ok {
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

// describe says an error as the API's Status would: code, reason, message.
func describe(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
	}
	return err.Error()
}

func (u *UI) listPods(cl *client, from caller, ns string, relist bool) (int64, error) {
	target := "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods"
	list, err := u.Pods.List(from.in(cl.Context()), storage.ListOptions{Namespace: ns})
	if err != nil {
		return 0, errors.New(describe(err))
	}
	items := make([]podRef, 0, len(list.Items))
	for _, it := range list.Items {
		if m, err := meta.Accessor(it); err == nil {
			items = append(items, podRef{Name: m.GetName(), RV: m.GetResourceVersion()})
		}
	}
	cl.Send(listMsg{T: "list", RV: list.ResourceVersion, Relist: relist, Request: "GET " + target, Items: items,
		horizons: u.horizonsNow(cl.Context())})
	return list.ResourceVersion, nil
}

// laneWatch is one watch of a lane, from rv until it ends.
type laneWatch struct {
	*lane
	target   string
	opts     storage.WatchOptions
	rv, last int64
	gone     bool
	err      error
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
	initial := true
	return &laneWatch{lane: l, streaming: true, relist: relist,
		target: "/api/v1/namespaces/" + url.PathEscape(l.ns) + "/pods?watch=1&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true",
		opts: storage.WatchOptions{Namespace: l.ns, AllowWatchBookmarks: true, SendInitialEvents: &initial,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}}
}

func (l *lane) newWatch(rv int64) *laneWatch {
	return &laneWatch{lane: l, rv: rv, last: rv,
		target: "/api/v1/namespaces/" + url.PathEscape(l.ns) + "/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + strconv.FormatInt(rv, 10),
		opts:   storage.WatchOptions{Namespace: l.ns, AllowWatchBookmarks: true, ResourceVersion: strconv.FormatInt(rv, 10)}}
}

// serve watches through the registry as the browser's user until the
// watch ends, and says how the lane goes on: from which resourceVersion
// (0: list first), whether that list is a relist, or not at all (ok
// false: the browser left, or the lane was closed with the watch's
// error).
func (w *laneWatch) serve() (rv int64, relist, ok bool) {
	w.opts.Deadline = time.Now().Add(laneWatchTimeout)
	watcher, err := w.u.Pods.Watch(w.from.in(w.cl.Context()), w.opts)
	if err != nil {
		w.err = errors.New(describe(err))
		return w.end()
	}
	defer watcher.Stop()
	w.cl.Send(watchingMsg{T: "watching", Request: "GET " + w.target, RV: w.rv})
	timeout := time.NewTimer(laneWatchTimeout)
	defer timeout.Stop()
	for {
		select {
		case ev, open := <-watcher.ResultChan():
			if !open || !w.onEvent(ev) {
				return w.end()
			}
		case <-timeout.C:
			return w.end()
		case <-w.cl.Context().Done():
			return w.end()
		}
	}
}

func (w *laneWatch) end() (rv int64, relist, ok bool) {
	switch {
	case w.cl.Context().Err() != nil:
		return 0, false, false
	case w.err != nil:
		w.cl.Close(websocket.StatusPolicyViolation, trimReason(w.err.Error()))
		return 0, false, false
	case w.gone:
		return 0, true, true
	default:
		return w.last, false, true // the watch timed out: resume where it was
	}
}

// onEvent forwards one watch event to the browser; false ends the watch.
func (w *laneWatch) onEvent(ev watch.Event) bool {
	if ev.Type == watch.Error {
		st, _ := ev.Object.(*metav1.Status)
		if st == nil {
			st = &metav1.Status{Code: http.StatusInternalServerError, Message: "an unreadable error"}
		}
		if st.Code == http.StatusGone {
			w.gone = true
			w.cl.Send(goneMsg{T: "gone", Code: st.Code, Reason: string(st.Reason), Message: st.Message, RV: w.rv})
		} else {
			w.err = fmt.Errorf("watch error %d: %s", st.Code, st.Message)
		}
		return false
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		w.err = err
		return false
	}
	rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if rv > 0 {
		w.last = rv
	}
	if w.streaming {
		// The initial events draw as a list does, once their end is known.
		switch {
		case ev.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true":
			w.streaming = false
			w.cl.Send(listMsg{T: "list", RV: rv, Relist: w.relist, Streamed: true, Request: "WATCH " + w.target,
				Items: w.initial, horizons: w.u.horizonsNow(w.cl.Context())})
			return true
		case ev.Type == watch.Added:
			w.initial = append(w.initial, podRef{Name: m.GetName(), RV: m.GetResourceVersion()})
			return true
		}
	}
	return w.cl.SendAndWrite(w.u.events.message(ev, rv, m.GetName()))
}

// eventMessages encodes each event's timeline message once for all the
// lanes that get it: the watch cache hands every watcher the same object,
// and encoding it a thousand times would be most of a fan-out's cost.
type eventMessages struct {
	mu      sync.RWMutex
	entries map[eventKey][]byte
}

// eventKey is one event: its object, shared by every watcher, and type.
type eventKey struct {
	obj runtime.Object
	typ watch.EventType
}

// eventMessagesKept bounds the messages kept; past it they start over.
const eventMessagesKept = 512

func (c *eventMessages) message(ev watch.Event, rv int64, name string) []byte {
	k := eventKey{ev.Object, ev.Type}
	c.mu.RLock()
	msg, ok := c.entries[k]
	c.mu.RUnlock()
	if ok {
		return msg
	}
	msg, _ = json.Marshal(eventMsg{T: "event", Type: string(ev.Type), RV: rv, Name: name})
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= eventMessagesKept {
		c.entries = make(map[eventKey][]byte, eventMessagesKept)
	}
	c.entries[k] = msg
	c.mu.Unlock()
	return msg
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
	u.compacted.set(rev)
	u.gate.last = time.Now()
	u.Logger.Info("compacted etcd from the web UI", "revision", rev, "user", user(c).Name)
	return c.JSON(http.StatusOK, map[string]int64{"revision": rev})
}
