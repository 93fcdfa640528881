package webui

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
)

// caller is who a live view acts for: the browser's user, for the
// registry's calls (RBAC decides what the view may read, watch and
// change), and the browser's address and credentials, for the requests
// a view shows as HTTP exchanges (Run it live, the poll-versus-watch race,
// the inspector's API JSON). A live view keeps
// this rather than the request, whose headers, URL and context (with the
// request's trace) it would otherwise hold for as long as it is open.
type caller struct {
	user                  pipeline.User
	remoteAddr, host      string
	cookie, authorization string
	// view is the page's view the requests are made for, as their traces
	// name it (pipeline.Trace.Source).
	view string
}

func callerOf(r *http.Request) caller {
	_, u, _ := pipeline.FromContext(r.Context())
	return caller{user: u, remoteAddr: r.RemoteAddr, host: r.Host,
		cookie: r.Header.Get("Cookie"), authorization: r.Header.Get("Authorization"), view: viewOf(r.URL.Path)}
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

// apiRequest builds a request to the API on behalf of the browser from,
// for a view that shows the HTTP exchange itself: it carries the
// browser's credentials (session cookie or bearer token), so it is
// authenticated, authorized, admitted and traced exactly as the same
// request from kubectl would be, and its trace names the view
// (pipeline.WithSource, a context value no client can set).
func apiRequest(ctx context.Context, from caller, method, target, contentType string, body []byte) *http.Request {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(pipeline.WithSource(ctx, from.view), method, target, rd)
	if err != nil {
		// target is built by this package from escaped parts; it parses.
		panic(err)
	}
	r.RequestURI = target
	r.RemoteAddr = from.remoteAddr
	r.Host = from.host
	if from.cookie != "" {
		r.Header.Set("Cookie", from.cookie)
	}
	if from.authorization != "" {
		r.Header.Set("Authorization", from.authorization)
	}
	r.Header.Set("User-Agent", "kubelab-web/v1 (browser)")
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// do serves r with the router and returns the whole response.
func (u *UI) do(r *http.Request) *response {
	rec := &response{header: http.Header{}}
	u.router.ServeHTTP(rec, r)
	if rec.Code == 0 {
		rec.Code = http.StatusOK
	}
	return rec
}

// response is a whole answer of the API to a request a view made.
type response struct {
	header http.Header
	Code   int
	Body   bytes.Buffer
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
}

func (w *response) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.Body.Write(p)
}

// Flush implements http.Flusher (the API flushes what it streams).
func (w *response) Flush() {}

// lineWriter is the ResponseWriter of a streamed API request (a watch):
// every complete line written is handed to onLine as it arrives, with no
// goroutine or pipe in between.
type lineWriter struct {
	header   http.Header
	code     int
	onHeader func(code int, h http.Header)
	// onLine must not keep line: it may be the writer's buffer.
	onLine  func(line []byte) bool
	buf     []byte
	stopped bool
}

func newLineWriter(onHeader func(int, http.Header), onLine func([]byte) bool) *lineWriter {
	return &lineWriter{header: http.Header{}, onHeader: onHeader, onLine: onLine}
}

func (w *lineWriter) Header() http.Header { return w.header }

func (w *lineWriter) WriteHeader(code int) {
	if w.code != 0 {
		return
	}
	w.code = code
	if w.onHeader != nil {
		w.onHeader(code, w.header)
	}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.stopped {
		return 0, io.ErrClosedPipe
	}
	// A watch writes whole lines: then they are handed on from p itself,
	// with nothing copied. Only a line split across writes is gathered in
	// buf.
	rest := p
	if len(w.buf) > 0 {
		w.buf = append(w.buf, p...)
		rest = w.buf
	}
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if !w.onLine(rest[:i]) {
			w.stopped = true
			return 0, io.ErrClosedPipe
		}
		rest = rest[i+1:]
	}
	if len(rest) == 0 {
		w.buf = nil // give back the memory of a burst between events
	} else {
		w.buf = append([]byte(nil), rest...) // p is the caller's to reuse
	}
	return len(p), nil
}

// Flush implements http.Flusher: lines are delivered as written.
func (w *lineWriter) Flush() {}

// rest delivers a last line without a newline, if any.
func (w *lineWriter) rest() {
	if s := strings.TrimSpace(string(w.buf)); s != "" && !w.stopped {
		w.onLine([]byte(s))
	}
	w.buf = nil
}
