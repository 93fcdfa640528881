// Package metricsapi is kubelab's own small aggregated API server, in the
// style of metrics-server: it serves metrics.k8s.io/v1beta1 on a loopback
// listener of its own, keeps its figures in memory (never in etcd), and
// is reached only through kubelab's aggregator, which it trusts by a
// bearer token to say who the user is in X-Remote-User. Its one resource,
// namespacemetrics, gives live per-namespace figures: how many objects of
// each kind a namespace holds, and how many requests it got in the last
// minute, from the trace bus.
package metricsapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
)

// GroupVersion served.
var GroupVersion = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}

// Window is how far back request rates look.
const Window = time.Minute

// NamespaceMetrics is one namespace's figures at a moment.
//
// +k8s:openapi-gen=true
type NamespaceMetrics struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	// Timestamp is when the figures were taken, Window what rates cover.
	Timestamp metav1.Time     `json:"timestamp"`
	Window    metav1.Duration `json:"window"`
	// Objects counts the namespace's objects by resource.
	Objects map[string]int `json:"objects"`
	// Requests counts the API requests made in the namespace in the window.
	Requests Requests `json:"requests"`
}

// Requests are request counts over a window.
//
// +k8s:openapi-gen=true
type Requests struct {
	Total     int            `json:"total"`
	PerMinute int            `json:"perMinute"`
	ByVerb    map[string]int `json:"byVerb,omitempty"`
}

// NamespaceMetricsList is a list of NamespaceMetrics.
//
// +k8s:openapi-gen=true
type NamespaceMetricsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []NamespaceMetrics `json:"items"`
}

// Counter counts objects per namespace and resource, at the moment asked.
type Counter func(ctx context.Context) (map[string]map[string]int, error)

// Traces is where finished requests come from; trace.Bus is one.
type Traces interface {
	Subscribe(ctx context.Context, filter func(pipeline.Trace) bool, buffer int) <-chan pipeline.Trace
}

// Config of the server.
type Config struct {
	Count  Counter
	Traces Traces
	// Interval is how old object counts may be before they are taken
	// again; 0 means 5 seconds.
	Interval time.Duration
	Logger   *slog.Logger
}

// Server serves metrics.k8s.io on its own loopback listener.
type Server struct {
	cfg   Config
	token string
	ln    net.Listener
	http  *http.Server
	docs  *openAPI
	stop  context.CancelFunc
	done  sync.WaitGroup

	scrapeMu sync.Mutex // one count at a time
	mu       sync.RWMutex
	counts   map[string]map[string]int
	scraped  time.Time
	requests map[string][]request // by namespace, oldest first
}

type request struct {
	at   time.Time
	verb string
}

// Start listens on a free loopback port and serves until Stop.
func Start(cfg Config) (*Server, error) {
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	docs, err := newOpenAPI()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 24)
	rand.Read(tok)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, token: hex.EncodeToString(tok), ln: ln, docs: docs, stop: cancel,
		counts: map[string]map[string]int{}, requests: map[string][]request{}}
	s.http = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	if cfg.Traces != nil {
		traces := cfg.Traces.Subscribe(ctx, func(t pipeline.Trace) bool { return t.Namespace != "" }, 1024)
		s.done.Go(func() { s.follow(ctx, traces) })
	}
	s.done.Go(func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("metrics API server stopped", "err", err)
		}
	})
	return s, nil
}

// URL is where the server listens.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Token is what a caller presents to be trusted as the aggregator.
func (s *Server) Token() string { return s.token }

// stopGrace bounds how long Stop waits for requests under way. net/http's
// Shutdown also waits up to 5 s for a connection on which no request has
// come yet, such as one the aggregator's transport dialed for a request
// cancelled meanwhile; nothing would come on it, and kubelab's shutdown
// would wait for it.
const stopGrace = time.Second

// Stop closes the listener, lets requests under way finish (for at most
// stopGrace) and ends scraping.
func (s *Server) Stop(ctx context.Context) {
	s.stop()
	ctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
	s.done.Wait()
}

// scrape takes the object counts, as metrics-server scrapes kubelets, but
// only when asked for figures and the last counts are older than the
// interval, so an idle class costs nothing.
func (s *Server) scrape(ctx context.Context) {
	if s.cfg.Count == nil {
		return
	}
	s.scrapeMu.Lock()
	defer s.scrapeMu.Unlock()
	s.mu.RLock()
	fresh := time.Since(s.scraped) < s.cfg.Interval
	s.mu.RUnlock()
	if fresh {
		return
	}
	counts, err := s.cfg.Count(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("counting objects for metrics", "err", err)
		}
		return
	}
	s.mu.Lock()
	s.counts, s.scraped = counts, time.Now()
	s.mu.Unlock()
}

// follow records each finished request of a namespace.
func (s *Server) follow(ctx context.Context, traces <-chan pipeline.Trace) {
	for {
		select {
		case <-ctx.Done():
			return
		case t, ok := <-traces:
			if !ok {
				return
			}
			s.mu.Lock()
			rs := append(s.requests[t.Namespace], request{at: t.Time, verb: t.Verb})
			s.requests[t.Namespace] = trim(rs, time.Now().Add(-Window))
			s.mu.Unlock()
		}
	}
}

// trim drops requests before since, and bounds what one namespace keeps.
func trim(rs []request, since time.Time) []request {
	i := sort.Search(len(rs), func(i int) bool { return !rs[i].at.Before(since) })
	if n := len(rs) - i; n > 100000 {
		i = len(rs) - 100000
	}
	return rs[i:]
}

// snapshot is every namespace's figures now.
func (s *Server) snapshot(ctx context.Context) []NamespaceMetrics {
	s.scrape(ctx)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	for ns := range s.counts {
		names[ns] = true
	}
	for ns, rs := range s.requests {
		s.requests[ns] = trim(rs, now.Add(-Window))
		if len(s.requests[ns]) == 0 {
			delete(s.requests, ns)
			continue
		}
		names[ns] = true
	}
	var out []NamespaceMetrics
	for ns := range names {
		m := NamespaceMetrics{
			TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "NamespaceMetrics"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, CreationTimestamp: metav1.NewTime(now.Truncate(time.Second))},
			Timestamp:  metav1.NewTime(s.scraped.Truncate(time.Second)), Window: metav1.Duration{Duration: Window},
			Objects: map[string]int{}, Requests: Requests{ByVerb: map[string]int{}},
		}
		for r, n := range s.counts[ns] {
			m.Objects[r] = n
		}
		for _, r := range s.requests[ns] {
			m.Requests.Total++
			m.Requests.ByVerb[r.verb]++
		}
		m.Requests.PerMinute = int(float64(m.Requests.Total) * float64(time.Minute) / float64(Window))
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// trusted: only the aggregator, with the token, may say who the user is.
func (s *Server) trusted(r *http.Request) bool {
	got := []byte(r.Header.Get("Authorization"))
	want := []byte("Bearer " + s.token)
	return subtle.ConstantTimeCompare(got, want) == 1 && r.Header.Get("X-Remote-User") != ""
}
