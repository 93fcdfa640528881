// Package adaptive is a concurrency limit that follows the server's
// latency, in the spirit of Netflix's concurrency-limits (its gradient
// limit) and of what kube-apiserver's priority and fairness aims at: admit
// only as many requests at once as the machine serves near its no-load
// latency, and refuse the rest at once instead of letting every request
// queue for the CPU.
//
// The limit watches the latency of the requests it admitted, as the median
// of short windows (a median, so that a few requests stalled by a disk
// flush or a collection do not count as overload), against a baseline:
// what the median is without load. The baseline follows lower medians
// quickly and higher ones slowly (a time constant of 100 s, and never
// more than 1% a second): an overload of seconds barely moves it, even
// one that builds up before the limit refuses anything, yet a lasting
// change in what requests cost (a class listing large namespaces) is
// learned within minutes instead of being refused for ever. While the median stays within Tolerance times the baseline
// plus Slack, the limit grows back towards Max by its square root a
// window. Past it for two windows in a row (one may be another process
// taking the CPU for a moment), the limit falls to what was in flight
// during the window (a limit far above that would refuse nothing) times
// (baseline×Tolerance+Slack)/median (at least one half), smoothed: it
// falls as fast as latency rises and stops where latency is back within
// the tolerance.
// It never goes below Min nor above Max (the server's hard caps,
// --max-requests-inflight and its mutating twin, which stay the absolute
// maxima), and it starts at Max: a server that is never overloaded never
// refuses more than its caps would.
package adaptive

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Config sets a Limit's bounds and tuning; zero fields take the defaults.
type Config struct {
	// Min and Max bound the limit; Max is the hard cap (required).
	Min, Max int
	// Initial is the limit before anything is measured (default Max).
	Initial int
	// Window is how long latencies are gathered for a median before the
	// limit is updated (default 100 ms); a window also needs MinSamples
	// requests.
	Window     time.Duration
	MinSamples int
	// Tolerance is how far past the baseline the median may rise before
	// the limit falls (default 2).
	Tolerance float64
	// Smoothing is how much of a window's lower limit is taken (default 0.5).
	Smoothing float64
	// Slack is added to the tolerated latency (default 1 ms): a median of
	// 0.7 ms rising to 1.5 ms is no overload.
	Slack time.Duration
	// BaselineDown and BaselineUp are the weights of a window's median in
	// the baseline when it is lower and when it is higher (defaults 0.05
	// and 0.001: time constants of 2 s and 100 s).
	BaselineDown, BaselineUp float64
	// Now is the clock (default time.Now); tests give a fake one.
	Now func() time.Time
}

// Limit is safe for concurrent use.
type Limit struct {
	cfg Config

	mu          sync.Mutex
	limit       float64
	inflight    int
	peak        int // most in flight during the window
	windowStart time.Time
	samples     []time.Duration // the window's latencies, the first maxSamples
	baseline    time.Duration   // 0 until the first window
	high        int             // windows in a row with the median past the tolerance
	refused     uint64
}

// New returns a Limit; Max must be at least 1.
func New(cfg Config) *Limit {
	if cfg.Max < 1 {
		cfg.Max = 1
	}
	if cfg.Min < 1 {
		cfg.Min = 1
	}
	if cfg.Min > cfg.Max {
		cfg.Min = cfg.Max
	}
	if cfg.Initial == 0 {
		cfg.Initial = cfg.Max
	}
	cfg.Initial = min(max(cfg.Initial, cfg.Min), cfg.Max)
	if cfg.Window <= 0 {
		cfg.Window = 100 * time.Millisecond
	}
	if cfg.MinSamples <= 0 {
		cfg.MinSamples = 10
	}
	if cfg.Tolerance <= 1 {
		cfg.Tolerance = 2
	}
	if cfg.Smoothing <= 0 || cfg.Smoothing > 1 {
		cfg.Smoothing = 0.5
	}
	if cfg.Slack == 0 {
		cfg.Slack = time.Millisecond
	}
	if cfg.BaselineDown <= 0 || cfg.BaselineDown > 1 {
		cfg.BaselineDown = 0.05
	}
	if cfg.BaselineUp <= 0 || cfg.BaselineUp > 1 {
		cfg.BaselineUp = 0.001
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limit{cfg: cfg, limit: float64(cfg.Initial), windowStart: cfg.Now()}
}

// Acquire admits a request if fewer than the limit are in flight; the
// caller must then call Release with its latency. It never waits.
func (l *Limit) Acquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight >= int(l.limit) {
		l.refused++
		return false
	}
	l.inflight++
	l.peak = max(l.peak, l.inflight)
	return true
}

// maxSamples bounds the latencies a window keeps for its median.
const maxSamples = 512

// Release ends an admitted request that took latency, and updates the
// limit when a window is complete.
func (l *Limit) Release(latency time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if len(l.samples) < maxSamples {
		l.samples = append(l.samples, latency)
	}
	now := l.cfg.Now()
	if len(l.samples) < l.cfg.MinSamples || now.Sub(l.windowStart) < l.cfg.Window {
		return
	}
	slices.Sort(l.samples)
	l.update(l.samples[len(l.samples)/2])
	l.windowStart, l.samples, l.peak = now, l.samples[:0], l.inflight
}

func (l *Limit) update(median time.Duration) {
	switch {
	case l.baseline == 0:
		l.baseline = median
	case median < l.baseline:
		l.baseline += time.Duration(float64(median-l.baseline) * l.cfg.BaselineDown)
	default:
		// At most the baseline itself a step, so that the medians of an
		// overload, however high, move it by BaselineUp at most.
		l.baseline += time.Duration(float64(min(median-l.baseline, l.baseline)) * l.cfg.BaselineUp)
	}
	tolerated := l.cfg.Tolerance*float64(l.baseline) + float64(l.cfg.Slack)
	if float64(median) <= tolerated {
		l.high = 0
		l.limit = math.Min(float64(l.cfg.Max), l.limit+math.Sqrt(l.limit))
		return
	}
	if l.high++; l.high < 2 {
		return
	}
	gradient := math.Max(0.5, tolerated/float64(median))
	used := math.Min(l.limit, float64(l.peak))
	s := l.cfg.Smoothing
	l.limit = math.Max(float64(l.cfg.Min), used*(1-s)+used*gradient*s)
}

// Stats is a Limit's state, for metrics and tests.
type Stats struct {
	Limit, Inflight int
	Baseline        time.Duration
	Refused         uint64
}

// Stats returns the limit's state now.
func (l *Limit) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Limit: int(l.limit), Inflight: l.inflight, Baseline: l.baseline, Refused: l.refused}
}
