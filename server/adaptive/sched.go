package adaptive

import (
	"math"
	"runtime/metrics"
	"sync"
	"time"
)

// SchedLatency measures how long goroutines wait for a CPU: Go's
// /sched/latencies:seconds, the time goroutines spend runnable before they
// run. A request waits so before it reaches the limit (its connection's
// goroutine, woken by the network, waits for a CPU like any other), so
// the latency of admitted requests shows CPU saturation only once it has
// built up; this shows it at once.
type SchedLatency struct {
	mu     sync.Mutex
	sample []metrics.Sample
	last   []uint64
}

const schedLatencies = "/sched/latencies:seconds"

func NewSchedLatency() *SchedLatency {
	s := &SchedLatency{sample: []metrics.Sample{{Name: schedLatencies}}}
	s.Quantile(0.5) // the counts so far are not the first window's
	return s
}

// Quantile is the q quantile of the waits since the last call (0 if none).
func (s *SchedLatency) Quantile(q float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := s.sample[0].Value.Float64Histogram()
	if len(s.last) != len(h.Counts) {
		s.last = make([]uint64, len(h.Counts))
	}
	var total uint64
	delta := make([]uint64, len(h.Counts))
	for i, c := range h.Counts {
		delta[i] = c - s.last[i]
		total += delta[i]
	}
	copy(s.last, h.Counts)
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range delta {
		if seen += c; seen >= want {
			// The bucket's upper bound (Buckets has one more entry than Counts).
			up := h.Buckets[i+1]
			if math.IsInf(up, 1) {
				up = h.Buckets[i]
			}
			return time.Duration(up * float64(time.Second))
		}
	}
	return 0
}
