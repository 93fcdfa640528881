package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"k8s.io/client-go/tools/clientcmd"
)

// soak runs kubelab for a long while under a steady load that touches
// everything long-lived: API watchers (resuming after timeouts, relisting
// after 410s that compaction causes), websocket clients of the web UI,
// steady writes, and compaction every minute. Every sample records the
// server's memory and goroutines, and whether any watcher has fallen
// behind the writes: one that stays behind is stuck.
func soak(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	duration := fs.Duration("duration", 20*time.Minute, "how long to run")
	sample := fs.Duration("sample", 30*time.Second, "how often to sample memory, goroutines and watchers")
	watchers := fs.Int("watchers", 200, "API watchers (plain HTTP watch streams)")
	sockets := fs.Int("websockets", 50, "web UI websocket clients (the watch timeline)")
	rate := fs.Int("rate", 20, "configmap writes per second")
	compaction := fs.Duration("compaction", time.Minute, "the server's --compaction-interval")
	bin := fs.String("kubelab", "", "the kubelab binary to measure; empty builds ./cmd/kubelab")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := startChild(ctx, *bin, "--compaction-interval", compaction.String(), "--simulated-node=false")
	if err != nil {
		return err
	}
	defer c.stop()
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	d := &driver{base: restCfg.Host, token: restCfg.BearerToken,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxIdleConns: 4096}}}
	if code, _ := d.do(ctx, http.MethodPost, "/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"soak"}}`)); code != http.StatusCreated {
		return fmt.Errorf("create namespace soak: %d", code)
	}
	const objects = 50
	for i := range objects {
		body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-%d"},"data":{"n":"0"}}`, i)
		if code, _ := d.do(ctx, http.MethodPost, "/api/v1/namespaces/soak/configmaps", body); code != http.StatusCreated {
			return fmt.Errorf("seed configmap: %d", code)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	w := &writer{}
	ws := make([]*apiWatcher, *watchers)
	for i := range ws {
		ws[i] = &apiWatcher{d: d}
		go ws[i].run(ctx)
	}
	socks := make([]*socket, *sockets)
	for i := range socks {
		socks[i] = &socket{}
		go socks[i].run(ctx, restCfg.Host)
	}
	go w.run(ctx, d, *rate, objects)

	fmt.Fprintf(out, "## kubelab-load soak, %s\n\n", time.Now().UTC().Format(time.DateTime))
	fmt.Fprintf(out, "%v; %d API watchers, %d websocket clients, %d configmap writes/s and one pod label a second, compaction every %v.\n\n",
		*duration, *watchers, *sockets, *rate, *compaction)
	fmt.Fprintln(out, "| minute | RSS MB | Go heap in use MB | goroutines | writes acked | API watchers behind / stuck | watch events | 410 relists | websockets without an event since the last sample | load average |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|")
	start := time.Now()
	tick := time.NewTicker(*sample)
	defer tick.Stop()
	var stuckTotal, silentTotal int
	for now := range tick.C {
		// A watcher is behind if it has not reached what was acknowledged
		// 10 s ago; stuck if it was behind at the last sample too and has
		// not moved since.
		target := w.ackedBefore(now.Add(-10 * time.Second))
		behind, stuck := 0, 0
		var events, gone int64
		for _, aw := range ws {
			last := aw.last.Load()
			if last < target {
				behind++
				if aw.prevSample == last {
					stuck++
				}
			}
			aw.prevSample = last
			events += aw.events.Load()
			gone += aw.gone.Load()
		}
		silent := 0
		for _, s := range socks {
			n := s.events.Load()
			if n == s.prevSample {
				silent++
			}
			s.prevSample = n
		}
		stuckTotal += stuck
		silentTotal += silent
		heap, goroutines := scrapeMetrics(ctx, d)
		fmt.Fprintf(out, "| %.1f | %.0f | %.1f | %.0f | %d | %d / %d | %d | %d | %d | %s |\n", now.Sub(start).Minutes(), c.rssMB(), heap/(1<<20), goroutines,
			w.acked.Load(), behind, stuck, events, gone, silent, loadavg())
		if now.Sub(start) >= *duration {
			break
		}
	}
	fmt.Fprintf(out, "\nWrite errors: %d. Stuck API watcher samples: %d. Silent websocket samples: %d.\n", w.errors.Load(), stuckTotal, silentTotal)
	return nil
}

// writer updates the configmaps at a steady rate, and a pod of the demo
// once a second for the websocket timeline.
type writer struct {
	acked, errors atomic.Int64
	mu            sync.Mutex
	log           []ack // acknowledged resourceVersions in time order
}

type ack struct {
	at time.Time
	rv int64
}

func (w *writer) run(ctx context.Context, d *driver, rate, objects int) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		<-tick.C
		path := fmt.Sprintf("/api/v1/namespaces/soak/configmaps/c-%d", i%objects)
		body := fmt.Appendf(nil, `{"data":{"n":"%d"}}`, i)
		if i%rate == 0 {
			path = "/api/v1/namespaces/internals-demo/pods/ssa-demo"
			body = fmt.Appendf(nil, `{"metadata":{"labels":{"soak":"%d"}}}`, i)
		}
		rv, err := d.patch(ctx, path, body)
		if err != nil {
			w.errors.Add(1)
			continue
		}
		if strings.Contains(path, "/configmaps/") {
			w.acked.Add(1)
			w.mu.Lock()
			w.log = append(w.log, ack{time.Now(), rv})
			w.mu.Unlock()
		}
	}
}

// ackedBefore is the last configmap resourceVersion acknowledged before t.
func (w *writer) ackedBefore(t time.Time) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var rv int64
	for _, a := range w.log {
		if a.at.After(t) {
			break
		}
		rv = a.rv
	}
	return rv
}

// patch sends a merge patch and returns the resourceVersion written.
func (d *driver) patch(ctx context.Context, path string, body []byte) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, d.base+path, strings.NewReader(string(body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var obj struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return 0, err
	}
	return strconv.ParseInt(obj.Metadata.ResourceVersion, 10, 64)
}

// apiWatcher watches the soak namespace's configmaps as a reflector does:
// from its last resourceVersion with a randomized timeout, relisting
// after a 410.
type apiWatcher struct {
	d            *driver
	last         atomic.Int64
	events, gone atomic.Int64
	prevSample   int64
}

func (a *apiWatcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		if a.last.Load() == 0 {
			a.relist(ctx)
			continue
		}
		timeout := 60 + rand.IntN(60)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/v1/namespaces/soak/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=%d",
			a.d.base, a.last.Load(), timeout), nil)
		req.Header.Set("Authorization", "Bearer "+a.d.token)
		resp, err := a.d.client.Do(req)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var ev struct {
				Type   string
				Object struct {
					Code     int
					Metadata struct{ ResourceVersion string }
				}
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			if ev.Type == "ERROR" {
				if ev.Object.Code == http.StatusGone {
					a.gone.Add(1)
					a.last.Store(0)
				}
				break
			}
			rv, _ := strconv.ParseInt(ev.Object.Metadata.ResourceVersion, 10, 64)
			if ev.Type != "BOOKMARK" {
				a.events.Add(1)
			}
			a.last.Store(rv)
		}
		resp.Body.Close()
	}
}

func (a *apiWatcher) relist(ctx context.Context) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.d.base+"/api/v1/namespaces/soak/configmaps", nil)
	req.Header.Set("Authorization", "Bearer "+a.d.token)
	resp, err := a.d.client.Do(req)
	if err != nil {
		time.Sleep(time.Second)
		return
	}
	defer resp.Body.Close()
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	if json.NewDecoder(resp.Body).Decode(&list) == nil {
		rv, _ := strconv.ParseInt(list.Metadata.ResourceVersion, 10, 64)
		a.last.Store(rv)
	}
}

// socket is a browser's watch timeline: the web UI's websocket, which
// lists and watches the demo's pods and sends each event on.
type socket struct {
	events     atomic.Int64
	prevSample int64
}

func (s *socket) run(ctx context.Context, base string) {
	for ctx.Err() == nil {
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ui/ws/watch?lane=A",
			&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {base}}})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		conn.SetReadLimit(4 << 20)
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				break
			}
			var m struct{ T string }
			if json.Unmarshal(data, &m) == nil && m.T == "event" {
				s.events.Add(1)
			}
		}
		conn.CloseNow()
	}
}

// scrapeMetrics reads the server's Go heap in use and goroutines from its
// /metrics.
func scrapeMetrics(ctx context.Context, d *driver) (heap, goroutines float64) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.client.Do(req)
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "go_memstats_heap_inuse_bytes":
			heap = v
		case "go_goroutines":
			goroutines = v
		}
	}
	return heap, goroutines
}
