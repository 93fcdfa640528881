package webui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// rawWS is the smallest possible websocket client: a TCP connection that
// did the handshake, and reads frames with no buffer of its own, so that
// memory measured in the process is the server's side of each connection.
type rawWS struct{ net.Conn }

func dialRaw(addr, path, origin string) (*rawWS, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: " + origin + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	// Read the response head byte by byte: nothing past it may be consumed.
	var head []byte
	b := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(b); err != nil {
			c.Close()
			return nil, err
		}
		head = append(head, b[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 101") {
		c.Close()
		return nil, fmt.Errorf("handshake: %s", head)
	}
	return &rawWS{c}, nil
}

// next reads one text frame (the server never masks or fragments these).
func (w *rawWS) next() ([]byte, error) { return nextFrame(w.Conn) }

func nextFrame(w io.Reader) ([]byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(w, h[:]); err != nil {
		return nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(w, l[:]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(w, l[:]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(w, p); err != nil {
		return nil, err
	}
	if h[0]&0x0f == 8 {
		return nil, fmt.Errorf("closed: %q", p)
	}
	return p, nil
}

// fanoutClients read the benchmark's websockets.
type fanoutClients interface {
	// await returns, for each client, the time from start until it got a
	// frame holding all of news, once every client has; round numbers the
	// calls.
	await(round int, start time.Time, news [][]byte, timeout time.Duration) ([]time.Duration, error)
	close()
}

// parseFrame parses the server frame at the start of b (never masked or
// fragmented): its payload and its size in b, or size 0 if b does not yet
// hold all of it.
func parseFrame(b []byte) (payload []byte, size int, err error) {
	if len(b) < 2 {
		return nil, 0, nil
	}
	head, n := 2, uint64(b[1]&0x7f)
	switch n {
	case 126:
		if len(b) < 4 {
			return nil, 0, nil
		}
		head, n = 4, uint64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		if len(b) < 10 {
			return nil, 0, nil
		}
		head, n = 10, binary.BigEndian.Uint64(b[2:10])
	}
	if uint64(len(b)-head) < n {
		return nil, 0, nil
	}
	payload = b[head : head+int(n)]
	if b[0]&0x0f == 8 {
		return nil, 0, fmt.Errorf("closed: %q", payload)
	}
	return payload, head + int(n), nil
}

func hasAll(p []byte, news [][]byte) bool {
	for _, n := range news {
		if !bytes.Contains(p, n) {
			return false
		}
	}
	return true
}

func (w *rawWS) until(t string) ([]byte, error) {
	for {
		p, err := w.next()
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(p), `"t":"`+t+`"`) {
			return p, nil
		}
	}
}

func liveBytes() (heap, stack uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

func rssKB() int {
	b, _ := os.ReadFile("/proc/self/status")
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// BenchmarkWebsocketFanout: 1,000 browsers on one live view; each
// iteration labels a pod and times how long until every browser has the
// news, from before the PATCH is sent. It reports the p50 and p99 over
// all deliveries, and the memory each idle connection holds on the server.
//
//   - timeline: each browser is a watch timeline lane, a websocket fed by
//     its own real API watch of the namespace's pods; the news is the
//     MODIFIED event.
//   - tracer: each browser is a pipeline tracer; the news is the PATCH's
//     trace.
func BenchmarkWebsocketFanout(b *testing.B) {
	b.Run("timeline", func(b *testing.B) {
		fanout(b, "/ui/ws/watch?lane=A", "watching", [][]byte{[]byte(`"type":"MODIFIED"`), []byte(`"name":"ssa-demo"`)})
	})
	b.Run("tracer", func(b *testing.B) {
		fanout(b, "/ui/ws/trace", "", [][]byte{[]byte(`"t":"trace"`), []byte(`"verb":"patch"`)})
	})
}

func fanout(b *testing.B, path, ready string, news [][]byte) {
	clients := 1000
	if s := os.Getenv("KUBELAB_FANOUT_CLIENTS"); s != "" {
		clients, _ = strconv.Atoi(s)
	}
	lab := kubelabtest.Start(b)
	addr := strings.TrimPrefix(lab.URL(), "http://")

	if os.Getenv("KUBELAB_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 512
	}
	heap0, stack0 := liveBytes()
	rssBefore, gBefore := rssKB(), runtime.NumGoroutine()
	conns := make([]*rawWS, clients)
	for i := range conns {
		c, err := dialRaw(addr, path, lab.URL())
		if err != nil {
			b.Fatalf("client %d: %v", i, err)
		}
		if ready != "" {
			if _, err := c.until(ready); err != nil {
				b.Fatalf("client %d: %v", i, err)
			}
		}
		conns[i] = c
	}
	time.Sleep(time.Second) // every server side settles (the tracer has no ready message)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	heap1, stack1 := liveBytes()
	if p := os.Getenv("KUBELAB_HEAP_PROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	rssAfter, gAfter := rssKB(), runtime.NumGoroutine()
	// The readers' buffers come after the measurement: they are the
	// benchmark's, not the server's.
	readers, err := newFanoutClients(conns)
	if err != nil {
		b.Fatal(err)
	}
	defer readers.close()

	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		value := "b" + strconv.Itoa(i)
		start := time.Now()
		patched := make(chan error, 1)
		go func() {
			req, _ := http.NewRequest("PATCH", lab.URL()+"/api/v1/namespaces/internals-demo/pods/ssa-demo",
				strings.NewReader(`{"metadata":{"labels":{"demo-round":"`+value+`"}}}`))
			req.Header.Set("Content-Type", "application/merge-patch+json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("patch: %s", resp.Status)
				}
			}
			patched <- err
		}()
		round, err := readers.await(i, start, news, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := <-patched; err != nil {
			b.Fatal(err)
		}
		lat = append(lat, round...)
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(float64(lat[0])/1e6, "min-ms")
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
	b.ReportMetric(float64(heap1-heap0)/float64(clients), "heap-B/conn")
	b.ReportMetric(float64(stack1-stack0)/float64(clients), "stack-B/conn")
	b.ReportMetric(float64(rssAfter-rssBefore)*1024/float64(clients), "rss-B/conn")
	b.ReportMetric(float64(gAfter-gBefore)/float64(clients), "goroutines/conn")
}

// BenchmarkLessonRender renders each lesson page, as the server does for
// a browser, and reports the median time of one render.
func BenchmarkLessonRender(b *testing.B) {
	lessons, err := web.LoadLessons()
	if err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	w := bufio.NewWriterSize(io.Discard, 64*1024)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		l := lessons[i18n.Langs[i%len(i18n.Langs)]]
		idx := (i / len(i18n.Langs)) % len(l.Pages)
		start := time.Now()
		page := web.PageWith(web.Meta{Title: l.Pages[idx].Title, Lang: l.Lang, Section: "lesson"}, web.LessonView(l, idx, "internals-demo", true))
		if err := page.Render(ctx, w); err != nil {
			b.Fatal(err)
		}
		w.Flush()
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e3, "p50-µs")
}

// BenchmarkLessonPageHTTP fetches a lesson page through the whole server
// (front door, authentication, authorization, render) over loopback HTTP
// and reports the median.
func BenchmarkLessonPageHTTP(b *testing.B) {
	lab := kubelabtest.Start(b)
	pages := []string{"/lesson/request-path", "/lesson/resource-version", "/lesson/gone", "/lesson/etcd", "/lesson/extending", "/lesson/model"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	var times []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		resp, err := client.Get(lab.URL() + pages[i%len(pages)])
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100])/1e3, "p99-µs")
}
