package topology

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// event is a write as the server acknowledged it, or as a watch delivered it.
type event struct {
	typ  watch.EventType
	name string
	rv   int64
}

func (e event) String() string { return fmt.Sprintf("%s %s@%d", e.typ, e.name, e.rv) }

// ledger records every acknowledged write, and the names of writes whose
// outcome is unknown (an error came back, but the write may have landed).
type ledger struct {
	mu        sync.Mutex
	acked     []event
	uncertain map[string]bool
	failures  []string
}

func (l *ledger) ack(e event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked = append(l.acked, e)
}

func (l *ledger) fail(name string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uncertain == nil {
		l.uncertain = map[string]bool{}
	}
	l.uncertain[name] = true
	l.failures = append(l.failures, fmt.Sprintf("%s: %v", name, err))
}

// sorted is every acknowledged write in resourceVersion order: the order a
// watch must deliver them in.
func (l *ledger) sorted() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.acked)
	slices.SortFunc(out, func(a, b event) int { return int(a.rv - b.rv) })
	return out
}

// latest is each object's last acknowledged resourceVersion.
func (l *ledger) latest() map[string]int64 {
	m := map[string]int64{}
	for _, e := range l.sorted() {
		m[e.name] = e.rv
	}
	return m
}

func (l *ledger) isUncertain(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.uncertain[name]
}

func (l *ledger) failureCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.failures)
}

func rvOf(t *testing.T, m metav1.Object) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Errorf("%s: resourceVersion %q: %v", m.GetName(), m.GetResourceVersion(), err)
	}
	return rv
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "topology"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
}

// create creates a pod through s, retrying (under a new name, since the
// failed attempt may have landed) until one is acknowledged or the wait ends.
func create(t *testing.T, l *ledger, s *server, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for attempt := 0; ; attempt++ {
		n := name
		if attempt > 0 {
			n = fmt.Sprintf("%s-r%d", name, attempt)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p, err := s.Client.CoreV1().Pods(ns).Create(ctx, pod(n), metav1.CreateOptions{})
		cancel()
		if err == nil {
			l.ack(event{watch.Added, n, rvOf(t, p)})
			return
		}
		l.fail(n, fmt.Errorf("create through %s: %w", s.Name, err))
		if time.Now().After(deadline) {
			t.Errorf("no create of %s acknowledged by kubelab %s within %s: %v", name, s.Name, wait, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// label changes a pod's labels through s. A merge patch that already landed
// changes nothing the second time, so retrying it is safe, and the
// resourceVersion it returns is the write's.
func label(t *testing.T, l *ledger, s *server, ns, name, value string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"round":%q}}}`, value))
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p, err := s.Client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		cancel()
		if err == nil {
			l.ack(event{watch.Modified, name, rvOf(t, p)})
			return
		}
		l.mu.Lock()
		l.failures = append(l.failures, fmt.Sprintf("label %s through %s: %v", name, s.Name, err))
		l.mu.Unlock()
		if apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Errorf("label %s through kubelab %s: %v", name, s.Name, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeLoad writes through every server at once: two writers per server
// create pods, then two per server relabel pods the other server created, so
// that writes through one server update objects another wrote.
func writeLoad(t *testing.T, l *ledger, ns, round string, servers ...*server) {
	t.Helper()
	const writers, perWriter = 2, 8
	name := func(s *server, w, i int) string { return fmt.Sprintf("%s-%s%d-%02d", round, s.Name, w, i) }
	var wg sync.WaitGroup
	for _, s := range servers {
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					create(t, l, s, ns, name(s, w, i))
				}
			})
		}
	}
	wg.Wait()
	for si, s := range servers {
		other := servers[(si+1)%len(servers)]
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter / 2 {
					if n := name(other, w, i); !l.isUncertain(n) {
						label(t, l, s, ns, n, round)
					}
				}
			})
		}
	}
	wg.Wait()
}

// checkReads gets every object through every server: each has its last
// acknowledged resourceVersion, and a list holds exactly the acknowledged
// objects (plus writes whose outcome was unknown, if they landed).
func checkReads(t *testing.T, l *ledger, ns string, servers ...*server) {
	t.Helper()
	latest := l.latest()
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		list, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			t.Errorf("list through %s: %v", s.Name, err)
			continue
		}
		listed := map[string]bool{}
		for _, p := range list.Items {
			listed[p.Name] = true
			want, ok := latest[p.Name]
			switch {
			case !ok && !l.isUncertain(p.Name):
				t.Errorf("list through %s: %s was never written", s.Name, p.Name)
			case ok && rvOf(t, &p) != want:
				t.Errorf("list through %s: %s has resourceVersion %s, last acknowledged %d", s.Name, p.Name, p.ResourceVersion, want)
			}
		}
		for name, want := range latest {
			if !listed[name] {
				t.Errorf("list through %s: acknowledged %s@%d is missing", s.Name, name, want)
			}
			p, err := s.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("get %s through %s: %v", name, s.Name, err)
				continue
			}
			if got := rvOf(t, p); got != want {
				t.Errorf("get %s through %s: resourceVersion %d, last acknowledged %d", name, s.Name, got, want)
			}
		}
		cancel()
	}
}
