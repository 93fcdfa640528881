package adaptive

import (
	"testing"
	"time"
)

// fake drives a Limit with a fake clock: each window, as many requests as
// the limit admits (up to demand) run concurrently and all take latency.
type fake struct {
	now time.Time
	l   *Limit
}

func newFake(cfg Config) *fake {
	f := &fake{now: time.Unix(0, 0)}
	cfg.Now = func() time.Time { return f.now }
	f.l = New(cfg)
	return f
}

// window offers demand concurrent requests that each take latency, and
// closes a window with them (the clock moves past it before the last
// one ends); it returns how many were admitted.
func (f *fake) window(demand int, latency time.Duration) int {
	admitted := 0
	for range demand {
		if f.l.Acquire() {
			admitted++
		}
	}
	for range admitted - 1 {
		f.l.Release(latency)
	}
	f.now = f.now.Add(f.l.cfg.Window)
	if admitted > 0 {
		f.l.Release(latency)
	}
	return admitted
}

func TestLimitGrowsWhileLatencyIsFlatAndTheLimitIsUsed(t *testing.T) {
	f := newFake(Config{Min: 2, Max: 400, Initial: 10})
	for range 50 {
		f.window(1000, 2*time.Millisecond)
	}
	if got := f.l.Stats().Limit; got != 400 {
		t.Fatalf("limit after 50 flat, busy windows: %d, want the cap 400", got)
	}
}

func TestLimitStartsAtMaxAndStaysThereWithoutOverload(t *testing.T) {
	f := newFake(Config{Min: 2, Max: 400})
	for range 50 {
		f.window(10, 2*time.Millisecond)
		f.window(50, 3*time.Millisecond) // within twice the baseline
	}
	if got := f.l.Stats().Limit; got != 400 {
		t.Fatalf("limit %d without overload, want the cap 400", got)
	}
}

func TestLimitFallsWhenLatencyRisesAndRecovers(t *testing.T) {
	f := newFake(Config{Min: 4, Max: 200, Initial: 100})
	for range 5 {
		f.window(1000, 2*time.Millisecond) // the baseline: 2 ms
	}
	before := f.l.Stats().Limit
	// The CPU saturates: latency rises with what is in flight.
	last := before
	for i := range 10 {
		admitted := f.window(1000, time.Duration(admittedLatency(f.l.Stats().Limit)))
		got := f.l.Stats().Limit
		if got > last {
			t.Fatalf("window %d: the limit rose from %d to %d while latency was high", i, last, got)
		}
		last = got
		_ = admitted
	}
	if last >= before/2 {
		t.Fatalf("limit %d after 10 slow windows, was %d: want it at least halved", last, before)
	}
	if b := f.l.Stats().Baseline; b < 2*time.Millisecond || b > 3*time.Millisecond {
		t.Fatalf("baseline %v, want it still near 2 ms", b)
	}
	// Latency back to the baseline: the limit recovers.
	for range 100 {
		f.window(1000, 2*time.Millisecond)
	}
	if got := f.l.Stats().Limit; got != 200 {
		t.Fatalf("limit after latency came back: %d, want the cap 200", got)
	}
}

// admittedLatency models a saturated CPU: 2 ms a request up to 8 in
// flight, then proportionally more.
func admittedLatency(inflight int) float64 {
	return float64(2*time.Millisecond) * max(1, float64(inflight)/8)
}

func TestLimitSettlesWhereLatencyIsWithinTolerance(t *testing.T) {
	f := newFake(Config{Min: 1, Max: 200, Initial: 100, Slack: time.Nanosecond})
	for range 3 {
		f.window(1000, 2*time.Millisecond)
	}
	for range 200 {
		f.window(1000, time.Duration(admittedLatency(f.l.Stats().Limit)))
	}
	got := f.l.Stats().Limit
	// Latency is within twice the baseline up to 16 in flight; past that
	// the limit falls, below it it grows back.
	if got < 8 || got > 24 {
		t.Fatalf("limit settled at %d, want near 16 (where latency is twice the baseline)", got)
	}
}

func TestLimitNeverBelowMin(t *testing.T) {
	f := newFake(Config{Min: 5, Max: 100, Initial: 50})
	f.window(1000, time.Millisecond)
	for range 200 {
		f.window(1000, time.Second)
	}
	if got := f.l.Stats().Limit; got != 5 {
		t.Fatalf("limit after sustained high latency: %d, want the floor 5", got)
	}
	// At the floor, Min requests are still admitted.
	if got := f.window(1000, time.Second); got != 5 {
		t.Fatalf("admitted %d at the floor, want 5", got)
	}
}

func TestAcquireRefusesPastTheLimitAndCountsIt(t *testing.T) {
	l := New(Config{Min: 1, Max: 3, Initial: 3})
	for i := range 3 {
		if !l.Acquire() {
			t.Fatalf("request %d refused under the limit", i)
		}
	}
	if l.Acquire() {
		t.Fatal("a fourth request admitted at limit 3")
	}
	l.Release(time.Millisecond)
	if !l.Acquire() {
		t.Fatal("refused after a release")
	}
	if s := l.Stats(); s.Inflight != 3 || s.Refused != 1 {
		t.Fatalf("stats %+v, want 3 in flight, 1 refused", s)
	}
}

func TestNewClampsItsBounds(t *testing.T) {
	l := New(Config{Min: 50, Max: 8})
	if s := l.Stats(); s.Limit != 8 {
		t.Fatalf("limit %d with Min over Max, want Max 8", s.Limit)
	}
	l = New(Config{Max: 400})
	if s := l.Stats(); s.Limit != 400 {
		t.Fatalf("initial limit %d, want Max", s.Limit)
	}
}

func TestNoUpdateBeforeAWindowHasEnoughSamples(t *testing.T) {
	f := newFake(Config{Min: 1, Max: 100, Initial: 50, MinSamples: 10})
	f.window(5, time.Millisecond)
	f.window(6, time.Second) // 11 samples now, their median 1 s; the first 5 closed no window
	if b := f.l.Stats().Baseline; b != time.Second {
		t.Fatalf("baseline %v, want the median of the first full window, 1 s", b)
	}
}

func TestOneStalledRequestIsNotOverload(t *testing.T) {
	f := newFake(Config{Min: 1, Max: 100, Initial: 50})
	f.window(20, 2*time.Millisecond)
	// A window in which one request of 20 waited for a disk flush.
	for range 20 {
		f.l.Acquire()
	}
	f.l.Release(time.Second)
	for range 18 {
		f.l.Release(2 * time.Millisecond)
	}
	f.now = f.now.Add(f.l.cfg.Window)
	f.l.Release(2 * time.Millisecond)
	f.window(20, 2*time.Millisecond)
	if got := f.l.Stats().Limit; got < 50 {
		t.Fatalf("limit %d after one stalled request, want it not lowered from 50", got)
	}
}

func TestOneSlowWindowIsNotOverload(t *testing.T) {
	f := newFake(Config{Min: 1, Max: 100, Initial: 50})
	f.window(20, 2*time.Millisecond)
	f.window(20, 50*time.Millisecond) // another process had the CPU
	if got := f.l.Stats().Limit; got < 50 {
		t.Fatalf("limit %d after one slow window, want it not lowered from 50", got)
	}
	f.window(20, 50*time.Millisecond) // still slow: now it is overload
	if got := f.l.Stats().Limit; got >= 20 {
		t.Fatalf("limit %d after two slow windows with 20 in flight, want it below 20", got)
	}
}

func TestBaselineLearnsALastingChangeButNotAnOverload(t *testing.T) {
	f := newFake(Config{Min: 1, Max: 100})
	f.window(20, 2*time.Millisecond)
	for range 3000 { // 5 min
		f.window(20, 3*time.Millisecond) // what requests cost now
	}
	if b := f.l.Stats().Baseline; b < 2900*time.Microsecond || b > 3*time.Millisecond {
		t.Fatalf("baseline %v, want it to have followed the usual median to 3 ms", b)
	}
	for range 100 {
		f.window(1000, 6*time.Millisecond) // 10 s of overload: the limit refuses
	}
	if b := f.l.Stats().Baseline; b > 3500*time.Microsecond {
		t.Fatalf("baseline %v after 10 s of overload, want it still near 3 ms", b)
	}
}

func TestALastingChangeInCostIsLearnedNotRefusedForEver(t *testing.T) {
	f := newFake(Config{Min: 2, Max: 100})
	f.window(20, time.Millisecond)
	// Requests now cost 5 ms whatever is in flight: not overload, though
	// the limit first takes it for one.
	for range 6000 { // 10 min (at the floor, a window needs several of these)
		f.window(20, 5*time.Millisecond)
	}
	if got := f.l.Stats().Limit; got < 20 {
		t.Fatalf("limit %d ten minutes after requests became slower, want it back above the 20 in flight", got)
	}
}

func TestAnOverloadMovesTheBaselineOnePercentASecondAtMost(t *testing.T) {
	f := newFake(Config{Min: 1, Max: 100})
	f.window(20, 2*time.Millisecond)
	for range 100 { // 10 s of medians 50 times the baseline
		f.window(1000, 100*time.Millisecond)
	}
	if b := f.l.Stats().Baseline; b > 2*time.Millisecond*111/100 {
		t.Fatalf("baseline %v after 10 s of overload, want at most 10%% over 2 ms", b)
	}
}
