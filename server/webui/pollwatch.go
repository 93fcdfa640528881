package webui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
)

// pollInterval is the lesson's buggy poller's interval.
const pollInterval = 500 * time.Millisecond

// raceLabel is the label the race changes on the lesson's pod.
const raceLabel = "kubelab.io/race"

// side counts one contender's cost and when it noticed the change.
type side struct {
	requests atomic.Int64
	bytes    atomic.Int64
	noticed  atomic.Int64 // nanoseconds after the change; 0 until noticed
}

type sideStats struct {
	Requests  int64    `json:"requests"`
	Bytes     int64    `json:"bytes"`
	NoticedMs *float64 `json:"noticedMs,omitempty"`
}

func (s *side) stats() sideStats {
	st := sideStats{Requests: s.requests.Load(), Bytes: s.bytes.Load()}
	if n := s.noticed.Load(); n > 0 {
		ms := float64(n) / 1e6
		st.NoticedMs = &ms
	}
	return st
}

type statsMsg struct {
	T     string    `json:"t"`
	Poll  sideStats `json:"poll"`
	Watch sideStats `json:"watch"`
}

// pollWatchStream races the lesson's 500 ms poller against one watch on
// the same pod, both real requests through the API; the browser's
// {"t":"change"} labels the pod and each side reports when it noticed.
func (u *UI) pollWatchStream(c echo.Context) error {
	ns := namespace(c)
	from := callerOf(c.Request())
	cl, ok := u.accept(c, smallSocket)
	if !ok {
		return nil
	}
	var poll, watch side
	var mu sync.Mutex
	var want string // the label value being raced for
	var changed time.Time
	notice := func(s *side, value string) {
		mu.Lock()
		defer mu.Unlock()
		if want != "" && value == want && s.noticed.Load() == 0 {
			s.noticed.Store(max(1, int64(time.Since(changed))))
		}
	}
	podPath := "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/ssa-demo"
	var wg sync.WaitGroup
	wg.Go(func() { // the poller, as the lesson's script: read, compare, sleep 500 ms
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		for {
			rec, err := u.do(u.request(cl.Context(), from, http.MethodGet, podPath, "", "", nil))
			poll.requests.Add(1)
			if err == nil {
				poll.bytes.Add(int64(len(rec.Body)))
				notice(&poll, labelOf(rec.Body))
			}
			select {
			case <-cl.Context().Done():
				return
			case <-t.C:
			}
		}
	})
	wg.Go(func() { // the watch: one request, held open
		target := "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods?watch=1&fieldSelector=" + url.QueryEscape("metadata.name=ssa-demo")
		watch.requests.Add(1)
		resp, err := u.send(u.request(cl.Context(), from, http.MethodGet, target, "", "", nil))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		lines(resp.Body, func(line []byte) bool {
			watch.bytes.Add(int64(len(line) + 1))
			var ev struct {
				Object json.RawMessage `json:"object"`
			}
			if json.Unmarshal(line, &ev) == nil {
				notice(&watch, labelOf(ev.Object))
			}
			return cl.Context().Err() == nil
		})
	})
	wg.Go(func() { // the scoreboard
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-cl.Context().Done():
				return
			case <-t.C:
			}
			if !cl.Send(statsMsg{T: "stats", Poll: poll.stats(), Watch: watch.stats()}) {
				return
			}
		}
	})
	u.serve(cl, func(b []byte) {
		var m struct{ T string }
		if json.Unmarshal(b, &m) != nil || m.T != "change" {
			return
		}
		value := strconv.FormatInt(time.Now().UnixNano(), 36)
		mu.Lock()
		want, changed = value, time.Now()
		poll.noticed.Store(0)
		watch.noticed.Store(0)
		mu.Unlock()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{raceLabel: value}}})
		rec, err := u.do(u.request(cl.Context(), from, http.MethodPatch, podPath, "", "application/merge-patch+json", patch))
		switch {
		case err != nil:
			cl.Send(endMsg{T: "error", Message: "the change got no answer"})
		case rec.Code >= 300:
			cl.Send(endMsg{T: "error", Message: statusError(rec.Code, rec.Body).Error()})
		}
	})
	wg.Wait()
	return nil
}

// labelOf reads the race label of a pod's JSON.
func labelOf(pod []byte) string {
	var p struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(pod, &p)
	return p.Metadata.Labels[raceLabel]
}
