package labhttp

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/handoff"
)

// watchesPerUser is how many watch streams are remembered per user.
const watchesPerUser = 32

// maxWatchUsers bounds how many users' watches are remembered; past it
// one user's are forgotten (they are only needed while a step is open).
const maxWatchUsers = 5000

// watches remembers the watch streams the server sent each user, as the
// server sent them: a pipeline trace is published only when a request
// ends, and a watch's interesting part (a MODIFIED, a BOOKMARK, a 410
// ERROR event) happens while it runs, inside a 200 response.
type watches struct {
	mu     sync.Mutex
	byUser map[string][]*labs.Watch
	// changed is told the user whose watch saw something.
	changed func(user string)
	// wanted says whose watches to observe: only students doing a lab,
	// so that everyone else's watches are served untouched.
	wanted func(user string) bool
}

func newWatches(changed func(string), wanted func(string) bool) *watches {
	return &watches{byUser: map[string][]*labs.Watch{}, changed: changed, wanted: wanted}
}

// snapshot copies user's watches, oldest first.
func (w *watches) snapshot(user string) []labs.Watch {
	w.mu.Lock()
	defer w.mu.Unlock()
	src := w.byUser[user]
	out := make([]labs.Watch, len(src))
	for i, x := range src {
		out[i] = *x
		out[i].Events = clone(x.Events)
		out[i].Last = clone(x.Last)
	}
	return out
}

func clone[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (w *watches) add(x *labs.Watch) {
	w.mu.Lock()
	if _, ok := w.byUser[x.User]; !ok && len(w.byUser) >= maxWatchUsers {
		for u := range w.byUser {
			delete(w.byUser, u)
			break
		}
	}
	list := append(w.byUser[x.User], x)
	if len(list) > watchesPerUser {
		list = list[len(list)-watchesPerUser:]
	}
	w.byUser[x.User] = list
	w.mu.Unlock()
	w.changed(x.User)
}

// seen is what one write of a watch stream carried.
type seen struct {
	types []string
	// bookmark is the resourceVersion of the last BOOKMARK in it.
	bookmark string
	// gone is the message of a 410 in it, or "" for none.
	gone    string
	expired bool
}

// saw records events of x's stream; it tells whoever follows the user
// when something new was seen.
func (w *watches) saw(x *labs.Watch, s seen) {
	now := time.Now()
	w.mu.Lock()
	news := false
	for _, t := range s.types {
		if x.Events[t] == 0 {
			news = true
		}
		x.Events[t]++
		x.Last[t] = now
	}
	if s.bookmark != "" && s.bookmark != x.Bookmark {
		x.Bookmark, news = s.bookmark, true
	}
	if s.expired && !x.Expired {
		x.Expired, x.Gone, news = true, s.gone, true
	}
	w.mu.Unlock()
	if news {
		w.changed(x.User)
	}
}

func (w *watches) done(x *labs.Watch) {
	w.mu.Lock()
	x.Done = true
	w.mu.Unlock()
}

// observe is middleware behind the front door: for a watch request it
// records the stream and reads the event types the server writes. It
// reads JSON streams (kubectl, curl and the browser's views ask for
// JSON); a protobuf stream is recorded as opened, its events are not read.
func (w *watches) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !strings.Contains(r.URL.RawQuery, "watch") && !strings.Contains(r.URL.Path, "/watch/") {
			return next(c)
		}
		x := watchOf(r)
		if x == nil {
			return next(c)
		}
		_, u, ok := pipeline.FromContext(r.Context())
		if !ok || !w.wanted(u.Name) {
			return next(c)
		}
		x.User = u.Name
		w.add(x)
		resp := c.Response()
		orig := resp.Writer
		resp.Writer = &eventSniffer{ResponseWriter: orig, w: w, x: x}
		defer func() {
			resp.Writer = orig
			// The stream may go on after the handler (package handoff),
			// with the sniffer it took.
			handoff.After(r.Context(), func() { w.done(x) })
		}()
		return next(c)
	}
}

// watchOf reads a watch request's resource and parameters from its URL,
// or nil if it is not a watch of a resource.
func watchOf(r *http.Request) *labs.Watch {
	q := r.URL.Query()
	p := strings.Trim(r.URL.Path, "/")
	seg := strings.Split(p, "/")
	var rest []string
	x := &labs.Watch{Time: time.Now(), Events: map[string]int{}, Last: map[string]time.Time{}, Source: pipeline.SourceFrom(r.Context())}
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		rest = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		x.APIGroup, rest = seg[1], seg[3:]
	default:
		return nil
	}
	isWatch := false
	if len(rest) > 0 && rest[0] == "watch" {
		isWatch, rest = true, rest[1:]
	}
	if v := q.Get("watch"); v == "1" || v == "true" {
		isWatch = true
	}
	if !isWatch {
		return nil
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		x.Namespace, rest = unescape(rest[1]), rest[2:]
	}
	if len(rest) == 0 {
		return nil
	}
	x.Resource = rest[0]
	x.ResourceVersion = q.Get("resourceVersion")
	x.Bookmarks = q.Get("allowWatchBookmarks") == "true" || q.Get("allowWatchBookmarks") == "1"
	return x
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// eventSniffer passes a watch stream through, noting each event's type.
// Events are written whole, one JSON object a line.
type eventSniffer struct {
	http.ResponseWriter
	w *watches
	x *labs.Watch
}

var (
	typeField   = []byte(`{"type":"`)
	rvField     = []byte(`"resourceVersion":"`)
	gone        = []byte(`"code":410`)
	messageText = []byte(`"message":"`)
)

func (s *eventSniffer) Write(b []byte) (int, error) {
	if got := sniff(b); len(got.types) > 0 || got.expired {
		s.w.saw(s.x, got)
	}
	return s.ResponseWriter.Write(b)
}

// sniff reads the events in one write of a JSON watch stream: their
// types, a BOOKMARK's resourceVersion, and a 410's message. A 410 comes
// as an ERROR event in a stream, or as a plain Status when the watch is
// refused before it starts.
func sniff(b []byte) seen {
	var out seen
	rest := b
	for {
		i := bytes.Index(rest, typeField)
		if i < 0 {
			break
		}
		rest = rest[i+len(typeField):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 || j > 16 {
			break
		}
		typ := string(rest[:j])
		out.types = append(out.types, typ)
		if typ == "BOOKMARK" {
			event := rest
			if k := bytes.Index(event, typeField); k >= 0 {
				event = event[:k]
			}
			if rv := stringField(event, rvField); rv != "" {
				out.bookmark = rv
			}
		}
	}
	if bytes.Contains(b, gone) {
		out.expired, out.gone = true, stringField(b, messageText)
	}
	return out
}

// stringField is the value of the first JSON string field named by
// field (`"name":"`) in b, as written: the fields read here
// (resourceVersions, kube's 410 message) hold nothing JSON escapes.
func stringField(b, field []byte) string {
	i := bytes.Index(b, field)
	if i < 0 {
		return ""
	}
	v := b[i+len(field):]
	j := bytes.IndexByte(v, '"')
	if j < 0 || j > 512 {
		return ""
	}
	return string(v[:j])
}

// Flush passes flushes through: a watch is flushed event by event.
func (s *eventSniffer) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (s *eventSniffer) Unwrap() http.ResponseWriter { return s.ResponseWriter }
