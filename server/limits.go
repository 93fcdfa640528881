package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/filters"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/adaptive"
)

// MaxUserInflight is classroom mode's share of the in-flight requests for
// one user: a student's runaway script cannot take the whole class's
// capacity. (The totals are Config.MaxRequestsInflight and
// MaxMutatingRequestsInflight, as kube-apiserver's flags; a request over
// a limit is refused at once with 429 and Retry-After, never queued.)
const MaxUserInflight = 50

// MaxUserWatches is classroom mode's cap on one user's open watches of
// the API. A watch holds no in-flight slot (it lasts minutes), so without
// it a student's script could hold thousands, each a goroutine and a
// queue in every replica. kubectl and client-go hold a few each; the lab's
// live views one per timeline lane.
const MaxUserWatches = 50

// MaxUserWebsockets is classroom mode's cap on one user's open live views
// (websockets), the live views' and the labs' together. The lab page,
// with every live view, keeps four open (tracer, two timeline lanes, poll
// vs watch) and one more while a command runs; ten leaves room for a
// second tab.
const MaxUserWebsockets = 10

// adaptiveFloor is the least the adaptive limits go down to, for reads and
// for mutations each: a few requests are always served, however slow.
const adaptiveFloor = 4

// inflight counts the requests being served, by kind and by user.
type inflight struct {
	// capped is kube-apiserver's own max-in-flight filter (with priority
	// and fairness off), around the rest of a short request's serving:
	// the caps on reads and on mutations, its 429, and its exemption of
	// system:masters, who always get an answer.
	capped http.Handler
	// users counts each user's short requests in flight and watches each
	// user's open watches; both are nil when there is no per-user limit.
	users, watches *userCounts
	// strangers counts the short requests in flight that came without
	// credentials, from every address together (nil with no per-user
	// limit). Each address has a user's share of its own, so that one
	// stranger cannot keep the class from signing in; together they get
	// at most half the mutating cap, so that a stranger with a few
	// addresses cannot take the places of the class's signed-in writes.
	strangers *userCounts
	// adaptiveReads and adaptiveMutations, if not nil, are limits under
	// the hard caps that fall when the latency of admitted requests rises
	// (package adaptive); nil when --adaptive-inflight-limit is off.
	adaptiveReads, adaptiveMutations *adaptive.Limit
}

// newInflight: perUser and watchesPerUser 0 mean no per-user limit.
func newInflight(reads, mutations, perUser, watchesPerUser int, adapt bool) *inflight {
	in := &inflight{}
	// Long-running requests never reach it (limit serves them first).
	in.capped = filters.WithMaxInFlightLimit(http.HandlerFunc(resumeAdmitted), reads, mutations, nil)
	if perUser > 0 {
		in.users = newUserCounts(perUser)
		in.strangers = newUserCounts(max(1, mutations/2))
	}
	if watchesPerUser > 0 {
		in.watches = newUserCounts(watchesPerUser)
	}
	if adapt {
		in.adaptiveReads = adaptive.New(adaptive.Config{Min: adaptiveFloor, Max: reads})
		in.adaptiveMutations = adaptive.New(adaptive.Config{Min: adaptiveFloor, Max: mutations})
	}
	return in
}

// limit is the middleware: after authentication (it needs the user) and
// routing (it classifies by the matched route), before the handlers.
// Long-running requests hold no slot and get no timeout, as in
// kube-apiserver: a watch counts against its user's watches instead, a
// websocket against its user's live views where it is served, a profile
// is for admins only. Which requests are long-running is decided from the
// route and the parsed verb, never from a header a client can add.
func limit(in *inflight, timeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// Health checks are exempt, as kube-apiserver's "probes"
			// flow schema makes them: load balancers and compose's health
			// check ask there, from an address others' requests may come
			// from too, and no limit that others can fill may hold them.
			if r := c.Request(); r.Method == http.MethodGet && isHealthPath(r.URL.Path) {
				return next(c)
			}
			switch classify(c) {
			case streamRequest:
				return next(c)
			case watchRequest:
				return in.serveWatch(c, next)
			}
			return in.serveShort(c, next, timeout)
		}
	}
}

// serveWatch holds one of the user's watch places while the watch lasts.
func (in *inflight) serveWatch(c echo.Context, next echo.HandlerFunc) error {
	if in.watches == nil {
		return next(c)
	}
	key := limitKey(c.Request())
	if !in.watches.Enter(key) {
		return apierrors.NewTooManyRequests(fmt.Sprintf(
			"too many watches open: at most %d per user (%s); stop another watch first", in.watches.max, key), 5)
	}
	defer in.watches.Leave(key)
	return next(c)
}

// admitted is a short request on its way through the max-in-flight
// filter, which is an http.Handler: what to serve it with once admitted,
// and how that went.
type admitted struct {
	c    echo.Context
	next echo.HandlerFunc
	err  error
}

type admittedKey struct{}

// resumeAdmitted is what the max-in-flight filter calls for a request it
// admitted: the request carries on through Echo.
func resumeAdmitted(_ http.ResponseWriter, r *http.Request) {
	a := r.Context().Value(admittedKey{}).(*admitted)
	a.err = a.next(a.c)
}

// serveShort serves a request that must finish soon: it takes a read or
// mutation slot, the user's share, and the request timeout.
func (in *inflight) serveShort(c echo.Context, next echo.HandlerFunc, timeout time.Duration) error {
	r := c.Request()
	// The user requests are served as, impersonated or not, as in kube,
	// where the filter runs after impersonation.
	_, u, _ := pipeline.FromContext(r.Context())
	// What the filter asks of a request: its verb (it counts get, list
	// and watch as reads; kubelab's REST handler parses the verb later,
	// so the method stands in for it) and its user.
	verb := "get"
	if isMutating(r.Method) {
		verb = strings.ToLower(r.Method)
	}
	ctx := apirequest.WithRequestInfo(r.Context(), &apirequest.RequestInfo{Verb: verb})
	ctx = apirequest.WithUser(ctx, &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	a := &admitted{c: c, next: func(c echo.Context) error { return in.serveAdmitted(c, next, timeout, u) }}
	in.capped.ServeHTTP(c.Response(), r.WithContext(context.WithValue(ctx, admittedKey{}, a)))
	return a.err
}

// serveAdmitted serves a short request within the hard caps: under them,
// kubelab's own limits (the adaptive one, each user's share), which, like
// the caps, let system:masters through, then the request timeout.
func (in *inflight) serveAdmitted(c echo.Context, next echo.HandlerFunc, timeout time.Duration, u pipeline.User) error {
	r := c.Request()
	adapt := in.adaptiveReads
	if isMutating(r.Method) {
		adapt = in.adaptiveMutations
	}
	if slices.Contains(u.Groups, pipeline.SystemPrivilegedGroup) {
		adapt = nil
	}
	// The adaptive limit refuses as the cap does (at once, 429), and
	// learns from the latency of what it admitted. The request's body is
	// not read yet either way.
	if adapt != nil {
		if !adapt.Acquire() {
			return tooManyRequests(c)
		}
		start := time.Now()
		defer func() { adapt.Release(time.Since(start)) }()
	}
	if in.users != nil && !slices.Contains(u.Groups, pipeline.SystemPrivilegedGroup) {
		key := limitKey(r)
		if !in.users.Enter(key) {
			return tooManyRequests(c)
		}
		defer in.users.Leave(key)
		if isStranger(r) {
			if !in.strangers.Enter(pipeline.AnonymousUser) {
				return tooManyRequests(c)
			}
			defer in.strangers.Leave(pipeline.AnonymousUser)
		}
	}
	d, err := requestTimeout(r, timeout)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	r = r.WithContext(ctx)
	// The body shares the request's deadline (bodyDeadline gave it the
	// server's), so that a body still coming then ends the request as a
	// slow handler would: 504, and the place given back.
	if err := setReadDeadline(c, deadline); err != nil {
		return err
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = deadlineBody{r.Body}
	}
	c.SetRequest(r)
	return next(c)
}

// deadlineBody is a body whose read deadline is its request's: a read cut
// off by it is context.DeadlineExceeded, which every handler answers as
// the request timeout.
type deadlineBody struct{ io.ReadCloser }

func (b deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		// Not the context's error: net/http cancels the request's
		// context as the read fails, which may be seen first.
		return n, fmt.Errorf("the request body did not arrive in time: %w", context.DeadlineExceeded)
	}
	return n, err
}

// limitKey is whose allowance a request uses: the authenticated user's,
// never the name it impersonates, and a student's for the tokens of their
// namespace's service accounts (budgetKey), or every service account a
// student may act as, or mint a token for, would bring a fresh allowance.
// Requests without credentials are counted by the address they come
// from: in one allowance for all of them, anyone on the network who held
// it (50 slowly sent bodies) kept every student from signing in.
func limitKey(r *http.Request) string {
	if isStranger(r) {
		return pipeline.AnonymousUser + "@" + clientAddr(r)
	}
	u, _ := pipeline.AuthenticatedFromContext(r.Context())
	if key, ok := budgetKey(u); ok {
		return key
	}
	return u.Name
}

// isStranger says whether r came without credentials.
func isStranger(r *http.Request) bool {
	u, _ := pipeline.AuthenticatedFromContext(r.Context())
	return u.Name == "" || u.IsAnonymous()
}

// bodyDeadline gives a short request's body the request timeout to arrive,
// as kube-apiserver's timeout filter frees the request's place then. A
// read of the body does not heed the request's context, so without it a
// body sent a byte at a time kept its place for as long as the sender
// liked. Watches and websockets send no body to wait for, and last.
func bodyDeadline(timeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if classify(c) == shortRequest {
				if err := setReadDeadline(c, time.Now().Add(timeout)); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

// setReadDeadline bounds the time the request's body may take. Both
// HTTP/1.1 and HTTP/2 connections take a deadline, and the next request
// on the connection starts without it. Only a writer with no connection
// under it (a test's recorder) takes none.
func setReadDeadline(c echo.Context, deadline time.Time) error {
	err := http.NewResponseController(c.Response()).SetReadDeadline(deadline)
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("bounding the request body's time: %w", err)
	}
	return nil
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

// userCounts counts something per user against a cap.
type userCounts struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newUserCounts(max int) *userCounts { return &userCounts{max: max, n: map[string]int{}} }

// Enter counts one more for user, or is false at the cap.

func (u *userCounts) Enter(user string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[user] >= u.max {
		return false
	}
	u.n[user]++
	return true
}

// Leave gives back a place Enter counted.
func (u *userCounts) Leave(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[user]--; u.n[user] <= 0 {
		delete(u.n, user)
	}
}

// Limit is the cap.
func (u *userCounts) Limit() int { return u.max }

// tooManyRequests answers as the max-in-flight filter refuses (its
// function for it is not exported): plain text, not a Status, with
// Retry-After, as kube-apiserver 1.37 answers.
func tooManyRequests(c echo.Context) error {
	c.Response().Header().Set("Retry-After", "1")
	http.Error(c.Response(), "Too many requests, please try again later.", http.StatusTooManyRequests)
	return nil
}

func isMutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// ReadHeaderTimeout is how long a connection may take to send a request's
// headers. Without it, a client that never finishes its headers (slowloris)
// holds a connection and a goroutine for ever, and a few thousand such
// connections exhaust the server's file descriptors. kube-apiserver allows
// 32s; every client kubelab expects sends its headers at once, so 10s is
// ample even on a slow classroom network.
const ReadHeaderTimeout = 10 * time.Second

// limitConnections sets the per-connection limits on an HTTP server: the
// header timeout, kube-apiserver's idle keep-alive timeout (the same as
// http.DefaultTransport's, so clients close first) and header size (1 MiB).
// A body is bounded by the request timeout and the 3 MiB body limit.
func limitConnections(srv *http.Server) {
	srv.ReadHeaderTimeout = ReadHeaderTimeout
	srv.IdleTimeout = 90 * time.Second
	srv.MaxHeaderBytes = 1 << 20
}
