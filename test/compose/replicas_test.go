package compose_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
)

// replicaStudents is how many students the replicas test simulates.
const replicaStudents = 30

// TestReplicas runs docker-compose.replicas.yml as the README says: three
// kubelab replicas behind HAProxy over the one etcd cluster. Thirty
// students sign in through the proxy, each with a watch of their
// namespace's ConfigMaps on a connection of its own (HAProxy spreads them
// over the replicas) and their writes on another: every write reaches its
// watcher with the resourceVersion the write answered, and the time from
// the write's sending to the event is logged (its p50 and p99). Then one
// replica is killed: its watchers reconnect through the proxy and resume
// (or get 410 Gone and list again), no acknowledged write is lost, and
// signing in, quizzes and labs go on.
func TestReplicas(t *testing.T) {
	t.Parallel()
	p := newProjectOf(t, "replicas", []string{"docker-compose.yml", "docker-compose.replicas.yml"}, "kubelab", "kubelab-2", "kubelab-3")
	p.up(t)

	// One admin kubeconfig, whichever replica it is copied from and
	// whichever the proxy picks: each kubectl run is a new connection.
	admin := p.adminKubeconfig(t)
	for range 6 {
		if who := clitest.KubectlWithOK(t, admin, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); who != "kubelab-admin" {
			t.Fatalf("the admin kubeconfig through the proxy is %q", who)
		}
	}
	ca := caOf(t, admin)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var class []*replicaStudent
	for i := range replicaStudents {
		s := p.signIn(t, ca, fmt.Sprintf("Student %02d", i+1))
		s.downloadKubeconfig(t, p)
		rs := &replicaStudent{student: s, writer: ownConnection(t, s.kubeconfig), acked: newAckLog()}
		rs.watcher = startWatcher(ctx, t, ownConnection(t, s.kubeconfig), s.name)
		class = append(class, rs)
	}

	var delays []time.Duration
	for _, s := range class {
		delays = append(delays, s.writeAndSee(t, "first"))
	}
	slices.Sort(delays)
	t.Logf("a write sent to its watcher's event, %d students over 3 replicas: p50 %s, p99 %s, max %s",
		len(delays), percentile(delays, 50), percentile(delays, 99), delays[len(delays)-1])

	t.Logf("memory with %d students watching:\n%s", len(class), p.memory(t))

	// A replica lost, as a crashed host leaves it: down until someone acts.
	docker(t, "kill", p.container("kubelab-2"))
	killed := time.Now()
	for _, s := range class {
		s.writeAndSee(t, "after-the-kill")
	}
	t.Logf("a replica killed: all %d students written and seen again %.1f s later", len(class), time.Since(killed).Seconds())
	reconnected := 0
	for _, s := range class {
		if s.watcher.restarts.Load() > 0 {
			reconnected++
		}
	}
	t.Logf("%d of %d watches reconnected through the proxy after a replica was killed", reconnected, len(class))
	if reconnected == 0 || reconnected == len(class) {
		t.Errorf("%d of %d watches reconnected: want those on the killed replica, some and not all", reconnected, len(class))
	}
	for _, s := range class {
		s.acked.allThereIn(t, s.writer, s.name)
	}

	// The class goes on: a new student signs in, and others pass a lab
	// step and submit a quiz.
	late := p.signIn(t, ca, "Late Student")
	late.downloadKubeconfig(t, p)
	class[0].passReadKey(t)
	class[1].submitQuiz(t)
	late.submitQuiz(t)
}

// replicaStudent is a student with two connections through the proxy: one
// for writes, one for a watch.
type replicaStudent struct {
	*student
	writer  kubernetes.Interface
	watcher *resumingWatch
	acked   *ackLog
}

// writeAndSee creates a ConfigMap (trying again while the write's
// connection fails, as after a replica's loss) and waits until the
// student's watch delivers it with the resourceVersion the create
// answered. It answers the time from the create's sending to the event:
// the event often comes before the create's own answer, since the watch's
// replica and the write's hear from etcd at once.
func (s *replicaStudent) writeAndSee(t *testing.T, name string) time.Duration {
	t.Helper()
	var (
		cm     *corev1.ConfigMap
		sentAt time.Time
	)
	eventually.HoldsWithin(t, time.Minute, s.name+" writing "+name, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		sentAt = time.Now()
		cm, err = s.writer.CoreV1().ConfigMaps(s.name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// An earlier try was written but its answer lost.
			cm, err = s.writer.CoreV1().ConfigMaps(s.name).Get(ctx, name, metav1.GetOptions{})
		}
		return err == nil, err
	})
	s.acked.add(name)
	seenAt, err := s.watcher.await(name, cm.ResourceVersion, time.Minute)
	if err != nil {
		t.Fatalf("%s's watch: %v", s.name, err)
	}
	return seenAt.Sub(sentAt)
}

// resumingWatch watches a namespace's ConfigMaps as a careful client does:
// when the stream ends it watches again from the last resourceVersion it
// saw, and on 410 Gone it lists again and goes on from the list.
type resumingWatch struct {
	mu       sync.Mutex
	seen     map[string]time.Time // "name@resourceVersion": when it arrived
	changed  chan struct{}        // closed and replaced on every arrival
	restarts atomic.Int32         // streams that ended and were opened again
	relists  atomic.Int32
}

func startWatcher(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) *resumingWatch {
	t.Helper()
	w := &resumingWatch{seen: map[string]time.Time{}, changed: make(chan struct{})}
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go w.run(ctx, cs, ns, list.ResourceVersion)
	return w
}

func (w *resumingWatch) run(ctx context.Context, cs kubernetes.Interface, ns, rv string) {
	configMaps := cs.CoreV1().ConfigMaps(ns)
	for ctx.Err() == nil {
		stream, err := configMaps.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		for err == nil {
			ev, ok := <-stream.ResultChan()
			if !ok {
				break
			}
			switch obj := ev.Object.(type) {
			case *corev1.ConfigMap:
				rv = obj.ResourceVersion
				if ev.Type != watch.Bookmark {
					w.arrived(obj)
				}
			case *metav1.Status:
				err = apierrors.FromObject(obj)
			}
		}
		if stream != nil {
			stream.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		w.restarts.Add(1)
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			list, lerr := configMaps.List(ctx, metav1.ListOptions{})
			if lerr == nil {
				w.relists.Add(1)
				for i := range list.Items {
					w.arrived(&list.Items[i])
				}
				rv = list.ResourceVersion
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *resumingWatch) arrived(cm *corev1.ConfigMap) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cm.Name + "@" + cm.ResourceVersion
	if _, ok := w.seen[key]; !ok {
		w.seen[key] = time.Now()
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// await waits until the watch has delivered name at resourceVersion rv.
func (w *resumingWatch) await(name, rv string, bound time.Duration) (time.Time, error) {
	deadline := time.After(bound)
	for {
		w.mu.Lock()
		at, ok := w.seen[name+"@"+rv]
		changed := w.changed
		w.mu.Unlock()
		if ok {
			return at, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return time.Time{}, fmt.Errorf("%s at resourceVersion %s not delivered within %s (%d restarts, %d relists)", name, rv, bound, w.restarts.Load(), w.relists.Load())
		}
	}
}

// ownConnection is a clientset for a kubeconfig that dials a connection of
// its own: client-go otherwise shares one HTTP/2 connection between clients
// of the same configuration, and through a TCP proxy a connection is a
// replica.
func ownConnection(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	return kubernetes.NewForConfigOrDie(cfg)
}

// allThereIn checks that every acknowledged write is in ns, and logs how
// many there were.
func (a *ackLog) allThereIn(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, cm := range list.Items {
		have = append(have, cm.Name)
	}
	names := a.all()
	for _, name := range names {
		if !slices.Contains(have, name) {
			t.Errorf("%s's acknowledged write %s is lost (have %s)", ns, name, strings.Join(have, ", "))
		}
	}
	t.Logf("%s: %d acknowledged writes, all there", ns, len(names))
}

// percentile is the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// memory is each of the project's containers' memory, as docker stats
// reports it.
func (p *project) memory(t *testing.T) string {
	t.Helper()
	ids := strings.Fields(p.compose(t, "ps", "--quiet"))
	return docker(t, append([]string{"stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}"}, ids...)...)
}
