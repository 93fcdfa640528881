package webui

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"strings"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/registry"
)

// caller is who a live view acts for: the browser's user, for the
// registry's calls (RBAC decides what the view may read, watch and
// change), and the browser's credential, for the requests a view shows
// as HTTP exchanges (Run it live, the poll-versus-watch race, the
// inspector's API JSON). A live view keeps this rather than the request,
// whose headers, URL and context (with the request's trace) it would
// otherwise hold for as long as it is open.
type caller struct {
	user pipeline.User
	// token is the browser's bearer token or session: its requests carry
	// it as a bearer token, so they are the browser's user's.
	token string
	// view is the page's view the calls are made for, as their traces
	// name it (pipeline.Trace.Source).
	view string
}

func callerOf(r *http.Request) caller {
	_, u, _ := pipeline.FromContext(r.Context())
	from := caller{user: u, view: viewOf(r.URL.Path)}
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		from.token = strings.TrimSpace(auth)
	} else if c, err := r.Cookie(authn.SessionCookieName(r)); err == nil {
		from.token = c.Value
	}
	return from
}

// in is ctx for a registry call as the browser's user, from its view: a
// write is traced as the user's, from the view, as over HTTP.
func (from caller) in(ctx context.Context) context.Context {
	return registry.WithUser(pipeline.WithSource(ctx, from.view), from.user)
}

// viewOf names the view behind one of the web UI's endpoints.
func viewOf(path string) string {
	switch {
	case path == "/ui/ws/watch" || path == "/ui/window/push" || path == "/ui/compact":
		return pipeline.ViewTimeline
	case path == "/ui/ws/run":
		return pipeline.ViewRunItLive
	case path == "/ui/ws/pollwatch":
		return pipeline.ViewPollVsWatch
	case strings.HasPrefix(path, "/ui/etcd/"):
		return pipeline.ViewInspector
	}
	return pipeline.ViewWeb
}

// The headers that name the view a request to kubelab's own listener is
// sent for. The front door believes ViewHeader only beside the key the
// server gave the web UI (Self.ViewKey), which no client ever sees: a
// client must not be able to pass for a view, nor hide that it is one.
const (
	ViewHeader    = "X-Kubelab-View"
	ViewKeyHeader = "X-Kubelab-View-Key"
)

// FromView is the front door's reading of those headers: it marks a
// request sent for one of the views with that view (pipeline.WithSource)
// if it carries key, the Self.ViewKey the web UI was given. The headers
// go either way: a client cannot pass for a view.
func FromView(key string) func(*http.Request) *http.Request {
	return func(r *http.Request) *http.Request {
		view, sent := r.Header.Get(ViewHeader), r.Header.Get(ViewKeyHeader)
		if view == "" && sent == "" {
			return r
		}
		r.Header.Del(ViewHeader)
		r.Header.Del(ViewKeyHeader)
		if key == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(key)) != 1 {
			return r
		}
		return r.WithContext(pipeline.WithSource(r.Context(), view))
	}
}

// userAgent is what kubelab's own requests for a browser say they are.
const userAgent = "kubelab-web/v1 (browser)"

// Self is how the web UI reaches kubelab's own listener.
type Self struct {
	// URL is the listener's base URL, on loopback.
	URL string
	// Client sends the requests; it has no timeout (watches stream).
	Client *http.Client
	// ViewKey proves to the front door that a request is the web UI's.
	ViewKey string
}

// request is a real HTTP request to kubelab's own listener on behalf of
// the browser from, for a view that shows the HTTP exchange itself: it
// carries the browser's credential, so it is authenticated, authorized,
// admitted and traced exactly as the same request from kubectl would be,
// and its trace names the view.
func (u *UI) request(ctx context.Context, from caller, method, target, accept, contentType string, body []byte) (*http.Request, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, u.Self.URL+target, rd)
	if err != nil {
		return nil, err
	}
	if from.token != "" {
		r.Header.Set("Authorization", "Bearer "+from.token)
	}
	r.Header.Set("User-Agent", userAgent)
	r.Header.Set(ViewHeader, from.view)
	r.Header.Set(ViewKeyHeader, u.Self.ViewKey)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r, nil
}

// maxAnswer bounds a whole answer read for a view (the lesson's longest,
// the OpenAPI document, is a few MB).
const maxAnswer = 32 << 20

// response is a whole answer to a request a view made.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// send sends r; its answer's body is the caller's to read and close.
func (u *UI) send(r *http.Request, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	return u.Self.Client.Do(r)
}

// do sends r and reads its whole answer.
func (u *UI) do(r *http.Request, err error) (*response, error) {
	resp, err := u.send(r, err)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	return &response{Code: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// lines reads a streamed answer (a watch) line by line, handing each to
// onLine until it returns false or the stream ends.
func lines(body io.Reader, onLine func([]byte) bool) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), maxAnswer)
	for sc.Scan() {
		if !onLine(sc.Bytes()) {
			return
		}
	}
}
