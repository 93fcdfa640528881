// Package faults kills and starves real kubelab processes under load and
// checks, against etcd's own history, that no acknowledged write is lost,
// that the clients' history is linearizable, and that watch streams have no
// gap, duplicate or reordering.
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// TestMain removes the kubelab binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	kubelabproc.RemoveBinary()
	os.Exit(code)
}

// envInt reads a knob for longer runs, e.g. KUBELAB_FAULT_KILLS=20.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

const ns = "faults"

// TestKillUnderLoad SIGKILLs kubelab (and so its embedded etcd) again and
// again while clients create and update configmaps with resourceVersion
// preconditions and watch them, and restarts it on the same data dir each
// time. Then it reads etcd's own history of the namespace and checks: every
// acknowledged write is in it with the resourceVersion the client got, no
// write is in it twice or half-written, the clients' operations are
// linearizable (porcupine, a per-key register with compare-and-set on the
// resourceVersion), and every watch stream is ordered, gap-free and
// duplicate-free. KUBELAB_FAULT_KILLS sets the number of kills (default 5).
func TestKillUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubelab and kills it under load")
	}
	kills := envInt("KUBELAB_FAULT_KILLS", 5)
	etcdAddr := kubelabproc.FreeAddr(t)
	s := kubelabproc.New(t, "k", "--etcd-listen-client", etcdAddr)
	kubelabproc.StartAll(t, s)
	// A request to a killed server fails at once; one that hangs must not
	// hold a client past the test's bounds. The admin token survives
	// restarts, so one client serves every run.
	s.Config.Timeout = 10 * time.Second
	client := kubernetes.NewForConfigOrDie(s.Config)
	current := func() *kubernetes.Clientset { return client }

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	created, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from, _ := strconv.ParseInt(created.ResourceVersion, 10, 64)

	h := newHistory()
	var watchers []*watcher
	for range 3 {
		watchers = append(watchers, startWatcher(current, ns, from))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var seq atomic.Int64
	const clients, keys = 6, 12
	for c := range clients {
		wg.Go(func() { runClient(ctx, h, current, c, keys, &seq, stop) })
	}

	var lost []string
	for k := range kills {
		time.Sleep(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
		acked := h.lastAcked()
		s.Kill()
		t.Logf("kill %d: SIGKILL after %d operations", k+1, h.len())
		time.Sleep(100 * time.Millisecond)
		s.Start(t)
		if err := s.Ready(t); err != nil {
			t.Fatalf("restart %d: %v", k+1, err)
		}
		h.ready()
		lost = append(lost, checkAfterRestart(ctx, t, client, acked)...)
	}
	time.Sleep(4 * time.Second) // streams time out and resume on the last server too
	close(stop)
	wg.Wait()

	etcdHistory := readEtcdHistory(t, "http://"+etcdAddr, from)
	// A watch from the start, before the last restart, gets 410 from the
	// last server, as from kube-apiserver, whose watch cache starts its
	// window at the list it makes on start (etcd's older history is not
	// replayed), and lists again.
	late := startWatcher(current, ns, from)
	watchers = append(watchers, late)
	deadline := time.Now().Add(kubelabproc.Wait)
	for _, w := range watchers {
		for len(etcdHistory) > 0 && w.lastRV() < etcdHistory[len(etcdHistory)-1].rv && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		w.stop()
	}

	lost = append(lost, checkAcked(h, etcdHistory)...)
	ops, landed, dropped := h.resolve(etcdHistory)
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, time.Minute)
	violations := realTimeOrder(ops)
	if res == porcupine.Illegal {
		violations = append(violations, "porcupine: the history is not linearizable")
		if f, err := os.CreateTemp("", "kubelab-porcupine-*.html"); err == nil {
			porcupine.Visualize(registerModel, info, f)
			f.Close()
			t.Logf("porcupine's visualization: %s", f.Name())
		}
	}
	if res == porcupine.Unknown {
		t.Errorf("porcupine did not finish checking %d operations within a minute", len(ops))
	}
	var gaps []string
	for i, w := range watchers {
		r := checkWatch(w, etcdHistory)
		t.Logf("watch %d: %d events, %d bookmarks, %d streams (%d ended in 410), %d violations", i, r.events, r.bookmarks, r.segments, r.gone, len(r.violations))
		gaps = append(gaps, r.violations...)
		switch {
		case w == late && r.gone == 0:
			t.Errorf("watch %d, from before the last restart, did not get 410", i)
		case w != late && r.events == 0:
			t.Errorf("watch %d saw no event: the check cannot have checked anything", i)
		}
	}
	t.Logf("%d kills; %d operations (%d writes in etcd; %d unknown outcomes landed, %d did not or were reads); porcupine: %s",
		kills, len(ops), len(etcdHistory), landed, dropped, res)
	t.Logf("FIGURES kills=%d acked_lost=%d linearizability_violations=%d watch_violations=%d", kills, len(lost), len(violations), len(gaps))
	for _, l := range lost {
		t.Errorf("lost: %s", l)
	}
	for _, v := range violations {
		t.Errorf("linearizability: %s", v)
	}
	for _, g := range gaps {
		t.Errorf("watch: %s", g)
	}
	if len(etcdHistory) < 10*kills {
		t.Errorf("only %d writes in %d kills: the load did not run", len(etcdHistory), kills)
	}
}

// runClient creates and updates the configmaps k0..k<keys-1>, shared with
// the other clients: a get, then an update with the resourceVersion read as
// precondition (a create if the key is missing), so that concurrent clients
// conflict. Every operation goes into the history.
func runClient(ctx context.Context, h *history, client func() *kubernetes.Clientset, id, keys int, seq *atomic.Int64, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("k%d", rand.IntN(keys))
		cms := client().CoreV1().ConfigMaps(ns)
		call := h.now()
		cm, err := cms.Get(ctx, key, metav1.GetOptions{})
		r := record{client: id, in: input{Op: opGet, Key: key}, call: call, ret: h.now(), out: classify(err)}
		if err == nil {
			r.out.RV, r.out.Value = rvOf(cm), cm.Data["v"]
			if cm.Data["sum"] != checksum(cm.Data["v"]) {
				r.out.Value = "half-written: " + cm.Data["v"]
			}
		}
		h.add(r)
		if r.out.Out == outUnknown {
			time.Sleep(20 * time.Millisecond) // the server is down: don't spin
			continue
		}
		value := fmt.Sprintf("c%d-%d", id, seq.Add(1))
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key},
			// The padding makes a torn write visible as a bad checksum.
			Data: map[string]string{"v": value, "sum": checksum(value), "pad": strings.Repeat(value, 64)}}
		w := record{client: id, in: input{Op: opCreate, Key: key, Value: value}, call: h.now()}
		var got *corev1.ConfigMap
		if r.out.Out == outOK {
			w.in.Op, w.in.ExpectRV = opUpdate, r.out.RV
			obj.ResourceVersion = cm.ResourceVersion
			got, err = cms.Update(ctx, obj, metav1.UpdateOptions{})
		} else {
			got, err = cms.Create(ctx, obj, metav1.CreateOptions{})
		}
		w.ret, w.out = h.now(), classify(err)
		if err == nil {
			w.out.RV = rvOf(got)
		}
		h.add(w)
	}
}

// classify maps an answer to an outcome. Only answers that say the write
// was refused are definite; anything else may have landed.
func classify(err error) output {
	switch {
	case err == nil:
		return output{Out: outOK}
	case apierrors.IsConflict(err):
		return output{Out: outConflict}
	case apierrors.IsAlreadyExists(err):
		return output{Out: outExists}
	case apierrors.IsNotFound(err):
		return output{Out: outNotFound}
	}
	return output{Out: outUnknown}
}

// torn reports a configmap of the test whose value and checksum disagree.
// kube-root-ca.crt, which kubelab publishes in every namespace, is not
// the test's.
func torn(cm *corev1.ConfigMap) bool {
	return cm.Name != "kube-root-ca.crt" && cm.Data["sum"] != checksum(cm.Data["v"])
}

func rvOf(cm *corev1.ConfigMap) int64 {
	rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	return rv
}

func (h *history) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.records)
}

// lastAcked is each key's highest acknowledged write so far.
func (h *history) lastAcked() map[string]record {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]record{}
	for _, r := range h.records {
		if r.in.Op != opGet && r.out.Out == outOK && r.out.RV > m[r.in.Key].out.RV {
			m[r.in.Key] = r
		}
	}
	return m
}

// checkAfterRestart reads every key a write was acknowledged for before the
// kill: the object is there, whole, at that write's resourceVersion or a
// later one (another client's write in flight may have landed since).
func checkAfterRestart(ctx context.Context, t *testing.T, client *kubernetes.Clientset, acked map[string]record) []string {
	var lost []string
	for key, r := range acked {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, key, metav1.GetOptions{})
		switch {
		case err != nil:
			lost = append(lost, fmt.Sprintf("after a restart, get %s (acknowledged at %d): %v", key, r.out.RV, err))
		case rvOf(cm) < r.out.RV:
			lost = append(lost, fmt.Sprintf("after a restart, %s is at resourceVersion %d, below the acknowledged %d", key, rvOf(cm), r.out.RV))
		case rvOf(cm) == r.out.RV && cm.Data["v"] != r.in.Value:
			lost = append(lost, fmt.Sprintf("after a restart, %s@%d holds %q, acknowledged %q", key, r.out.RV, cm.Data["v"], r.in.Value))
		case torn(cm):
			lost = append(lost, fmt.Sprintf("after a restart, %s@%d is half-written", key, rvOf(cm)))
		}
	}
	return lost
}

// checkAcked checks every acknowledged write against etcd's history: it is
// there, at the resourceVersion returned, with the value written; and no
// value is in the history twice.
func checkAcked(h *history, etcdHistory []applied) []string {
	byValue := map[string]applied{}
	var bad []string
	for _, a := range etcdHistory {
		if _, dup := byValue[a.value]; dup && a.value != "" { // "": not the test's
			bad = append(bad, fmt.Sprintf("%q was written twice (again at %d)", a.value, a.rv))
		}
		byValue[a.value] = a
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.in.Op == opGet || r.out.Out != outOK {
			continue
		}
		a, ok := byValue[r.in.Value]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("the acknowledged %s of %s=%q at %d is not in etcd's history", r.in.Op, r.in.Key, r.in.Value, r.out.RV))
		case a.rv != r.out.RV || a.key != r.in.Key:
			bad = append(bad, fmt.Sprintf("the acknowledged %s of %s=%q at %d is in etcd's history as %s at %d", r.in.Op, r.in.Key, r.in.Value, r.out.RV, a.key, a.rv))
		}
	}
	return bad
}

// readEtcdHistory reads every write to the namespace's configmaps after
// resourceVersion from, in order, from etcd itself rather than through
// kubelab: the reference the clients and watchers are checked against.
func readEtcdHistory(t *testing.T, endpoint string, from int64) []applied {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kubelabproc.Wait)
	defer cancel()
	prefix := "/registry/configmaps/" + ns + "/"
	head, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	end := head.Header.Revision
	codec := storage.NewProtobufCodec(kubeapi.Scheme, corev1.SchemeGroupVersion)
	var out []applied
	wch := c.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from+1))
	// The watch says it has sent everything up to end with a progress
	// notification at or past end; ask for one until it comes.
	go func() {
		for ctx.Err() == nil {
			c.RequestProgress(ctx)
			time.Sleep(200 * time.Millisecond)
		}
	}()
	for resp := range wch {
		if err := resp.Err(); err != nil {
			t.Fatalf("etcd history: %v", err)
		}
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut {
				t.Fatalf("etcd history: %s of %s: the test deletes nothing", ev.Type, ev.Kv.Key)
			}
			cm := &corev1.ConfigMap{}
			if err := codec.Decode(ev.Kv.Value, cm); err != nil {
				t.Fatalf("etcd history: %s@%d: %v", ev.Kv.Key, ev.Kv.ModRevision, err)
			}
			if torn(cm) {
				t.Errorf("etcd holds %s@%d half-written", ev.Kv.Key, ev.Kv.ModRevision)
			}
			out = append(out, applied{key: cm.Name, rv: ev.Kv.ModRevision, value: cm.Data["v"], created: ev.Kv.CreateRevision == ev.Kv.ModRevision})
		}
		if resp.IsProgressNotify() && resp.Header.Revision >= end {
			return out
		}
	}
	t.Fatalf("etcd history: the watch ended before revision %d: %v", end, ctx.Err())
	return nil
}
