package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/adaptive"
)

// MaxUserInflight is classroom mode's share of the in-flight requests for
// one user: a student's runaway script cannot take the whole class's
// capacity. (The totals are Config.MaxRequestsInflight and
// MaxMutatingRequestsInflight, as kube-apiserver's flags; a request over
// a limit is refused at once with 429 and Retry-After, never queued.)
const MaxUserInflight = 50

// websocketsPerStudent is classroom mode's cap on one user's open live
// views (lesson pages open several each: tracer, timeline lanes, run it
// live); past it a new one is refused with 429.
const websocketsPerStudent = 24

// adaptiveFloor is the least the adaptive limits go down to, for reads and
// for mutations each: a few requests are always served, however slow.
const adaptiveFloor = 4

// inflight counts the requests being served, by kind and by user.
type inflight struct {
	reads, mutations chan struct{}
	perUser          int // 0: no per-user limit
	// adaptiveReads and adaptiveMutations, if not nil, are limits under
	// the hard caps that fall when the latency of admitted requests rises
	// (package adaptive); nil when --adaptive-inflight-limit is off.
	adaptiveReads, adaptiveMutations *adaptive.Limit

	mu    sync.Mutex
	users map[string]int
}

func newInflight(reads, mutations, perUser int, adapt bool) *inflight {
	in := &inflight{reads: make(chan struct{}, reads), mutations: make(chan struct{}, mutations), perUser: perUser, users: map[string]int{}}
	if adapt {
		in.adaptiveReads = adaptive.New(adaptive.Config{Min: adaptiveFloor, Max: reads})
		in.adaptiveMutations = adaptive.New(adaptive.Config{Min: adaptiveFloor, Max: mutations})
	}
	return in
}

// limit is the middleware: after authentication (it needs the user), before
// the handlers. Long-running requests (watches, websockets, profiles) hold
// no slot and get no timeout, as in kube-apiserver; they have limits of
// their own (a watch's timeoutSeconds, bounded per-watcher queues).
func limit(in *inflight, timeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if isLongRunning(r) {
				return next(c)
			}
			slots, adapt := in.reads, in.adaptiveReads
			if isMutating(r.Method) {
				slots, adapt = in.mutations, in.adaptiveMutations
			}
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				return tooManyRequests()
			}
			// Under the hard cap, the adaptive limit: it refuses as the cap
			// does (at once, 429), and learns from the latency of what it
			// admitted. The request's body is not read yet either way.
			if adapt != nil {
				if !adapt.Acquire() {
					return tooManyRequests()
				}
				start := time.Now()
				defer func() { adapt.Release(time.Since(start)) }()
			}
			if in.perUser > 0 {
				_, u, _ := pipeline.FromContext(r.Context())
				if !in.enter(u.Name) {
					return tooManyRequests()
				}
				defer in.leave(u.Name)
			}
			d, err := requestTimeout(r, timeout)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
	}
}

// requestTimeout is kube-apiserver's: a client may ask for a shorter
// deadline with ?timeout= (client-go sends its own timeout so); a longer
// one, or none, gets the server's, and one that does not parse is a 400.
func requestTimeout(r *http.Request, max time.Duration) (time.Duration, error) {
	s := r.URL.Query().Get("timeout")
	if s == "" {
		return max, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL: %v", err))
	}
	if d <= 0 || d > max {
		return max, nil
	}
	return d, nil
}

func (in *inflight) enter(user string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.users[user] >= in.perUser {
		return false
	}
	in.users[user]++
	return true
}

func (in *inflight) leave(user string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.users[user]--; in.users[user] <= 0 {
		delete(in.users, user)
	}
}

// tooManyRequests is kube-apiserver's refusal, word for word.
func tooManyRequests() error {
	return apierrors.NewTooManyRequests("Too many requests, please try again later.", 1)
}

func isMutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// isLongRunning: a watch (?watch=1 or a /watch/ path), a websocket, or a
// profile (which runs for as long as it was asked to).
func isLongRunning(r *http.Request) bool {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
		return true
	}
	if w := r.URL.Query().Get("watch"); w == "1" || w == "true" {
		return true
	}
	return strings.Contains(r.URL.Path, "/watch/")
}
