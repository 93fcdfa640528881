package labhttp

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/labs"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
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
		out[i].BookmarkRVs = slices.Clone(x.BookmarkRVs)
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

// seen is what one event of a watch stream carried.
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
	if x.SawBookmark(s.bookmark) {
		news = true
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

// observe is middleware behind the front door: for a watch request of a
// student doing a lab it records the stream, and asks the registry to
// tell it each event the watch sends (registry.WithWatchObserver), so
// that a protobuf watch (client-go's) is followed as well as a JSON one.
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
		c.SetRequest(r.WithContext(registry.WithWatchObserver(r.Context(), &watchObserver{w: w, x: x})))
		err := next(c)
		if resp := c.Response(); !resp.Committed || resp.Status != http.StatusOK {
			// Refused before the registry opened a watch (RBAC, a bad
			// parameter): no observer will say it is done.
			w.done(x)
		}
		return err
	}
}

// watchObserver records what one observed watch sends.
type watchObserver struct {
	w *watches
	x *labs.Watch
}

var _ registry.WatchObserver = (*watchObserver)(nil)

func (o *watchObserver) Event(ev watch.Event) {
	s := seen{types: []string{string(ev.Type)}}
	switch ev.Type {
	case watch.Bookmark:
		if m, err := meta.Accessor(ev.Object); err == nil {
			s.bookmark = m.GetResourceVersion()
		}
	case watch.Error:
		if st, ok := ev.Object.(*metav1.Status); ok && st.Code == http.StatusGone {
			s.expired, s.gone = true, st.Message
		}
	}
	o.w.saw(o.x, s)
}

// Refused records a watch refused with 410 before it started (a watch
// served from etcd, below its compacted revision).
func (o *watchObserver) Refused(err error) {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code == http.StatusGone {
		o.w.saw(o.x, seen{expired: true, gone: st.Status().Message})
	}
}

func (o *watchObserver) Done() { o.w.done(o.x) }

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
