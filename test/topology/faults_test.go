package topology

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// attempt is one create of the steady load, as its client saw it.
type attempt struct {
	client     int
	start, end time.Time
	err        error
}

// steadyLoad creates pods through s from a few clients, without pause,
// until stopped, recording every attempt. A failed create is not retried:
// its outcome is unknown, and the ledger says so.
type steadyLoad struct {
	mu       sync.Mutex
	attempts []attempt
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startLoad(t *testing.T, l *ledger, s *server, ns string, clients int) *steadyLoad {
	ld := &steadyLoad{stop: make(chan struct{})}
	for c := range clients {
		ld.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-ld.stop:
					return
				default:
				}
				name := fmt.Sprintf("load-%d-%05d", c, i)
				// Longer than the server's request timeout: a request that
				// outlives it hangs, and the test says so.
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				a := attempt{client: c, start: time.Now()}
				p, err := s.Client.CoreV1().Pods(ns).Create(ctx, pod(name), metav1.CreateOptions{})
				cancel()
				a.end, a.err = time.Now(), err
				if err == nil {
					l.ack(event{watch.Added, name, rvOf(t, p)})
				} else {
					l.fail(name, err)
				}
				// A steady trickle, not a flood: every write is read back
				// at the end, within the test's bounds.
				time.Sleep(80 * time.Millisecond)
				ld.mu.Lock()
				ld.attempts = append(ld.attempts, a)
				ld.mu.Unlock()
			}
		})
	}
	return ld
}

func (ld *steadyLoad) halt() {
	close(ld.stop)
	ld.wg.Wait()
}

// loadSummary is what the attempts that started after a fault came to.
type loadSummary struct {
	ok, failed int
	// slowest is the worst failure latency; recovered, how long after the
	// fault the writes were acknowledged again for good (the first success
	// after the last failure).
	slowest, recovered time.Duration
	// worstClient is the most failures any one client had.
	worstClient int
	// errors counts the failures by message; notStatus lists those that
	// were not a Kubernetes 5xx Status.
	errors    map[string]int
	notStatus []string
}

// since summarizes the attempts that started after t0.
func (ld *steadyLoad) since(t0 time.Time) loadSummary {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	sum := loadSummary{errors: map[string]int{}}
	var lastFail time.Time
	perClient := map[int]int{}
	for _, a := range ld.attempts {
		if a.start.Before(t0) {
			continue
		}
		if a.err == nil {
			sum.ok++
			continue
		}
		sum.failed++
		perClient[a.client]++
		sum.worstClient = max(sum.worstClient, perClient[a.client])
		sum.slowest = max(sum.slowest, a.end.Sub(a.start))
		lastFail = a.end
		var st apierrors.APIStatus
		if !errors.As(a.err, &st) || st.Status().Code < 500 {
			sum.notStatus = append(sum.notStatus, a.err.Error())
			continue
		}
		sum.errors[fmt.Sprintf("%d %s", st.Status().Code, st.Status().Message)]++
	}
	for _, a := range ld.attempts {
		if a.err == nil && !a.start.Before(t0) && !a.end.Before(lastFail) {
			if sum.recovered == 0 || a.end.Sub(t0) < sum.recovered {
				sum.recovered = a.end.Sub(t0)
			}
		}
	}
	if sum.failed == 0 {
		sum.recovered = 0
	}
	return sum
}

// TestMemberFaultsUnderLoad stops etcd members under a steady load of
// creates through one kubelab, with watch streams open: a follower, then
// the leader, then two members at once (quorum lost), restarting each
// time. kubelab must keep serving (with a quorum, only requests made
// during the election may fail), or fail requests with a 5xx
// Status within its request timeout (never hang), recover by itself, and
// the watch streams must resume with no gap. It logs the time to recover.
func TestMemberFaultsUnderLoad(t *testing.T) {
	// Not parallel: it times how soon writes recover, which other tests'
	// clusters starting beside it would slow.
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster and a kubelab process")
	}
	kubelabBinary(t)
	cluster := storagetest.StartCluster(t, 3)
	// A short request timeout, so that a request without quorum ends
	// within the test's bounds; the default is kube-apiserver's minute.
	const requestTimeout, clients = 3 * time.Second, 4
	s := kubelabproc.New(t, "s", "--etcd-endpoints", strings.Join(cluster.Endpoints(), ","), "--request-timeout", requestTimeout.String())
	startServers(t, s)
	const ns = "faults"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	created, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := rvOf(t, created)
	l := &ledger{}
	w1, w2 := startWatch(t, s, ns, from), startWatch(t, s, ns, from)
	load := startLoad(t, l, s, ns, clients)
	time.Sleep(2 * time.Second)

	// phase stops the members pick chooses, holds, restarts them, and
	// measures from the moment the first was stopped.
	phase := func(what string, pick func() []int, hold time.Duration, quorum bool) {
		t.Helper()
		stopped := pick()
		t0 := time.Now()
		for _, i := range stopped {
			cluster.Members[i].Crash()
		}
		time.Sleep(hold)
		restarted := time.Now()
		restartMembers(t, cluster, stopped...)
		waitHealthy(t, cluster)
		// The load goes on with every member back, until each client could
		// have had a create acknowledged since.
		eventually.Holds(t, what+": creates acknowledged after the restart", func() (bool, error) {
			return load.since(restarted).ok >= clients, nil
		})
		sum := load.since(t0)
		afterRestart := max(sum.recovered-restarted.Sub(t0), 0)
		t.Logf("%s: %d creates acknowledged, %d failed (at most %d by one client; slowest failure %v; %v); writes acknowledged again for good %v after the fault, %v after the members were started again (%v after the fault)",
			what, sum.ok, sum.failed, sum.worstClient, sum.slowest.Round(time.Millisecond), sum.errors, sum.recovered.Round(time.Millisecond), afterRestart.Round(time.Millisecond), restarted.Sub(t0).Round(time.Millisecond))
		t.Logf("FIGURES phase=%q acked=%d failed=%d recover_ms=%d recover_after_restart_ms=%d slowest_failure_ms=%d",
			what, sum.ok, sum.failed, sum.recovered.Milliseconds(), afterRestart.Milliseconds(), sum.slowest.Milliseconds())
		// With a quorum, only the election's requests may fail: a client's
		// create may be refused at once by the member as it stops (503
		// "raft: stopped"), and its next wait out the request timeout
		// (504) while the others elect a leader. That is two per client
		// when the election is quick; on a loaded machine an election, and
		// the etcd client's move off the stopped member, can take a few
		// rounds more, so the bound allows four more timeouts (the figures
		// above are the measure, this only catches a server that does not
		// recover by itself).
		if recoverWithin := 10 * requestTimeout; quorum && (sum.worstClient > 6 || sum.recovered > recoverWithin) {
			t.Errorf("%s: a client's creates failed %d times, writes acknowledged again after %v; with a quorum, at most 6 each may fail, within %v",
				what, sum.worstClient, sum.recovered, recoverWithin)
		}
		if sum.slowest > 10*time.Second {
			t.Errorf("%s: a failed create took %v: a hang, not an answer", what, sum.slowest)
		}
		for _, e := range sum.notStatus {
			t.Errorf("%s: a create failed without a 5xx Status: %s", what, e)
		}
		if sum.ok == 0 {
			t.Errorf("%s: no create acknowledged: kubelab did not recover", what)
		}
	}
	phase("a follower crashed", func() []int { return []int{member(t, cluster, false)} }, 3*time.Second, true)
	phase("the leader crashed", func() []int { return []int{member(t, cluster, true)} }, 3*time.Second, true)
	phase("the leader and a follower crashed (no quorum)", func() []int {
		leader := member(t, cluster, true)
		for i := range cluster.Members {
			if i != leader {
				return []int{leader, i}
			}
		}
		return nil
	}, 6*time.Second, false)
	load.halt()
	w1.check(t, "after the member faults", l)
	w2.check(t, "after the member faults", l)
	checkReads(t, l, ns, s)
	t.Logf("%d creates acknowledged in all; %d failed", len(l.sorted()), l.failureCount())
}
