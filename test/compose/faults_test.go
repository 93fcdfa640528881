package compose_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/eventually"
)

// TestEtcdFaults takes etcd members away from a running class, as Docker
// can: one stopped, one killed, one cut off from the network, then two
// stopped (quorum lost). With one member gone the class goes on: /readyz
// stays ready, writes succeed and a watch opened before sees them. With
// two gone, a write fails with a Status within the request timeout (kubelab
// answers 503 when etcd says it timed out, 504 when the request timeout
// comes first) and /readyz fails; once they return, nothing acknowledged
// is lost.
func TestEtcdFaults(t *testing.T) {
	t.Parallel()
	p := newProject(t, "etcd-faults")
	p.up(t)
	admin := p.adminKubeconfig(t)
	cs := clientset(t, admin)
	acked := newAckLog()

	watcher := watchConfigMaps(t, cs, "")
	p.compose(t, "stop", "etcd-1")
	classGoesOn(t, p, cs, acked, watcher, "with etcd-1 stopped")
	p.upAgain(t)

	docker(t, "kill", p.container("etcd-2"))
	classGoesOn(t, p, cs, acked, watcher, "with etcd-2 killed")
	p.upAgain(t)

	// Cut off: the member runs on, unreachable, and rejoins when
	// reconnected (under its service name again, as Compose named it).
	network := p.name + "_default"
	docker(t, "network", "disconnect", network, p.container("etcd-0"))
	classGoesOn(t, p, cs, acked, watcher, "with etcd-0 cut off")
	docker(t, "network", "connect", "--alias", "etcd-0", network, p.container("etcd-0"))
	p.upAgain(t)
	eventually.HoldsWithin(t, 2*time.Minute, "etcd-0 back in the cluster", func() (bool, error) {
		out, err := p.run("exec", "-T", "etcd-0", "etcdctl", "endpoint", "health", "--cluster")
		return err == nil && strings.Count(out, "is healthy") == 3, fmt.Errorf("%v %s", err, out)
	})

	// Quorum lost: a write is refused, not held past the request timeout
	// (kubelab's default, a minute, and a wide margin), and /readyz fails.
	p.compose(t, "stop", "etcd-1", "etcd-2")
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "without-quorum"}}, metav1.CreateOptions{})
	took := time.Since(started)
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		t.Fatalf("a write without quorum: %v, want a Status", err)
	}
	if took > 90*time.Second {
		t.Fatalf("a write without quorum was held %s, past the request timeout (a minute)", took)
	}
	t.Logf("a write without quorum: %d %s %q after %.1f s", status.Status().Code, status.Status().Reason, status.Status().Message, took.Seconds())
	eventually.HoldsWithin(t, 2*time.Minute, "/readyz failing without quorum", func() (bool, error) {
		code, err := readyz(p)
		return err == nil && code != http.StatusOK, fmt.Errorf("/readyz: %d %v", code, err)
	})
	// As the README says: start the stopped members. (up would refuse:
	// without quorum etcd-0's own health check failed, and Compose will not
	// start what depends on an unhealthy member.)
	p.compose(t, "start", "etcd-1", "etcd-2")
	eventually.HoldsWithin(t, 2*time.Minute, "the class served again with quorum back", func() (bool, error) {
		err := tryWrite(cs, acked)
		return err == nil, err
	})
	acked.allThere(t, cs)
}

// classGoesOn checks that the class is served with an etcd member down:
// /readyz answers 200, a write through the published port succeeds, and
// the watch opened before it sees the write. The etcd client may need a
// moment to move off the member it was using, so the check waits (a wide
// bound) and logs how many tries and how long it took: figures, not
// assertions.
func classGoesOn(t *testing.T, p *project, cs kubernetes.Interface, acked *ackLog, w watch.Interface, when string) {
	t.Helper()
	tries, started := 0, time.Now()
	eventually.HoldsWithin(t, time.Minute, "the class served "+when, func() (bool, error) {
		tries++
		if code, err := readyz(p); err != nil || code != http.StatusOK {
			return false, fmt.Errorf("/readyz: %d %v", code, err)
		}
		err := tryWrite(cs, acked)
		return err == nil, err
	})
	t.Logf("%s: served after %d tries, %.1f s", when, tries, time.Since(started).Seconds())
	want := acked.last()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: the watch opened before ended", when)
			}
			if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && cm.Name == want {
				return
			}
			if ev.Type == watch.Error {
				t.Fatalf("%s: the watch opened before ended with %+v", when, ev.Object)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: the watch opened before did not see %s within a minute", when, want)
		}
	}
}

// ackLog is every write a server acknowledged, by name: what must be there
// after any fault.
type ackLog struct {
	mu    sync.Mutex
	names []string
}

func newAckLog() *ackLog { return &ackLog{} }

func (a *ackLog) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.names[len(a.names)-1]
}

func (a *ackLog) add(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.names = append(a.names, name)
}

func (a *ackLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.names)
}

// tryWrite creates a ConfigMap and logs it once acknowledged.
func tryWrite(cs kubernetes.Interface, acked *ackLog) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "acked-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	acked.add(name)
	return nil
}

// allThere checks that every acknowledged write is in default.
func (a *ackLog) allThere(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	a.allThereIn(t, cs, "default")
}

// watchConfigMaps opens a watch of default's ConfigMaps from rv ("" is
// now), ended with the test.
func watchConfigMaps(t *testing.T, cs kubernetes.Interface, rv string) watch.Interface {
	t.Helper()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func clientset(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
}

func readyz(p *project) (int, error) {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(p.httpURL() + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// container is the name Compose gives a service's one container.
func (p *project) container(service string) string { return p.name + "-" + service + "-1" }

// TestKubelabKilled kills kubelab's process mid-write, as a crash would
// (not docker kill, which Docker counts as a stop by hand and does not
// restart), and lets Compose's restart policy bring it back: no
// acknowledged write is lost, and a watch from a resourceVersion seen
// before the restart gets kube's 410 Gone (the new watch cache starts at
// the current revision) and lists again.
func TestKubelabKilled(t *testing.T) {
	t.Parallel()
	p := newProject(t, "kubelab-killed")
	p.up(t)
	cs := clientset(t, p.adminKubeconfig(t))
	acked := newAckLog()
	if err := tryWrite(cs, acked); err != nil {
		t.Fatal(err)
	}
	before, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Writes one after another, from before the kill until after the
	// restart; those refused while kubelab is down are not acknowledged.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if tryWrite(cs, acked) != nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	eventually.Holds(t, "writes under way", func() (bool, error) { return len(acked.all()) > 5, nil })
	restarts := p.restartCount(t, "kubelab")
	pid, err := strconv.Atoi(strings.TrimSpace(docker(t, "inspect", "-f", "{{.State.Pid}}", p.container("kubelab"))))
	if err != nil || pid <= 0 {
		t.Fatalf("kubelab's process: %d %v", pid, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := len(acked.all())
	killed := time.Now()
	eventually.HoldsWithin(t, 3*time.Minute, "kubelab restarted by Compose and writing again", func() (bool, error) {
		return p.restartCount(t, "kubelab") > restarts && len(acked.all()) > killedAt+5, nil
	})
	t.Logf("killed kubelab: writing again %.1f s later", time.Since(killed).Seconds())
	close(stop)
	<-done
	acked.allThere(t, cs)

	t.Logf("a watch from before the restart: %v", wantGone(t, cs, before.ResourceVersion, "before the restart"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the relist: %v", err)
	}
}

// restartCount is how many times Docker restarted a service's container.
func (p *project) restartCount(t *testing.T, service string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(docker(t, "inspect", "-f", "{{.RestartCount}}", p.container(service))))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantGone watches default's ConfigMaps from rv and wants kube's 410 Gone
// as the stream's first word (an ERROR event, or the watch refused); it
// answers that error. when says what rv is, for the failure.
func wantGone(t *testing.T, cs kubernetes.Interface, rv, when string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err == nil {
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			err = fmt.Errorf("a %s event", ev.Type)
			if ev.Type == watch.Error {
				err = apierrors.FromObject(ev.Object)
			}
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("a watch from resourceVersion %s, %s: %v, want 410 Gone", rv, when, err)
	}
	return err
}
