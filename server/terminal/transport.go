package terminal

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
)

// Caller is what the terminal's requests take from the browser's own
// websocket request: its address, TLS state and credentials. Every API
// request a command makes carries them, so the front door authenticates,
// authorizes, admits and traces it as the student's, exactly as the same
// request from the student's own kubectl.
type Caller struct {
	RemoteAddr, Host      string
	TLS                   *tls.ConnectionState
	Cookie, Authorization string
}

// CallerOf keeps what a command's requests need from the browser's request.
func CallerOf(r *http.Request) Caller {
	return Caller{RemoteAddr: r.RemoteAddr, Host: r.Host, TLS: r.TLS,
		Cookie: r.Header.Get("Cookie"), Authorization: r.Header.Get("Authorization")}
}

// server is the address the caller reached kubelab at, as a URL, or ""
// if their Host does not make one.
func (c Caller) server() string {
	scheme := "http"
	if c.TLS != nil {
		scheme = "https"
	}
	u, err := url.Parse(scheme + "://" + c.Host)
	if c.Host == "" || err != nil || u.Host != c.Host || u.Path != "" {
		return ""
	}
	return u.String()
}

// apply makes r the caller's: their address, TLS state and host, and
// their credentials, and only those: a command's own Authorization (none
// is configured) must not stand in for them.
func (c Caller) apply(r *http.Request) {
	r.RemoteAddr, r.Host, r.TLS = c.RemoteAddr, c.Host, c.TLS
	r.Header.Del("Authorization")
	r.Header.Del("Cookie")
	if c.Cookie != "" {
		r.Header.Set("Cookie", c.Cookie)
	}
	if c.Authorization != "" {
		r.Header.Set("Authorization", c.Authorization)
	}
}

// inProcess is an http.RoundTripper that serves each request with
// kubelab's own router, in this process, as the caller: kubectl's client
// reaches no socket, so it can reach no other server whatever its
// configuration says, and the request passes the same middleware (front
// door, limits, pipeline, trace) as one from the network.
type inProcess struct {
	router http.Handler
	from   Caller
	// ctx is the command's: when it ends (Ctrl-C, time cap, the browser
	// left) every request of the command ends with it.
	ctx context.Context
	// inFlight holds each request's cancel, for CancelRequest.
	inFlight sync.Map
}

// CancelRequest ends a request in flight: client-go's wrappers call it
// (and log a warning for a transport without it) when they give up on a
// request.
func (t *inProcess) CancelRequest(req *http.Request) {
	if cancel, ok := t.inFlight.Load(req); ok {
		cancel.(context.CancelFunc)()
	}
}

var _ http.RoundTripper = (*inProcess)(nil)

// RoundTrip serves req and returns as soon as the handler has written its
// header, with a body that streams what the handler writes next: a watch
// arrives event by event.
func (t *inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.ctx, cancel)
	t.inFlight.Store(req, cancel)
	done := func() {
		stop()
		cancel()
		t.inFlight.Delete(req)
	}
	target := &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r := req.Clone(ctx)
	r.URL = target
	r.RequestURI = target.RequestURI()
	t.from.apply(r)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				pw.CloseWithError(fmt.Errorf("serving %s: %v", target.Path, p))
				w.announce(http.StatusInternalServerError)
			}
		}()
		t.router.ServeHTTP(w, r)
		w.announce(http.StatusOK)
		pw.Close()
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		done()
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &body{pr: pr, cancel: done},
		ContentLength: -1, Request: req,
	}, nil
}

// pipeWriter is the handler's ResponseWriter: the header is handed to
// RoundTrip once written, and the body goes through a pipe to the client,
// so a slow reader slows the handler instead of growing a buffer.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	code   int
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) announce(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(code int) { w.announce(code) }

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.announce(http.StatusOK)
	return w.pw.Write(p)
}

// Flush implements http.Flusher: what is written is already on its way.
func (w *pipeWriter) Flush() {}

// body ends the handler when the client is done with the response.
type body struct {
	pr     *io.PipeReader
	cancel func()
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.pr.Read(p)
	if errors.Is(err, context.Canceled) {
		// The command was interrupted: to the client the stream just ends,
		// as when the server closes a watch.
		err = io.EOF
	}
	return n, err
}

func (b *body) Close() error {
	b.cancel()
	return b.pr.Close()
}
