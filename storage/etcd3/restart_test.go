package etcd3_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestWatcherResumesAcrossRestartWithoutGapOrDuplicate: a client that saw
// events up to some resourceVersion, then lost the server (and etcd) while
// writes went on, gets kube-apiserver's 410 from the restarted server,
// whose window starts at its list; with ReplayEtcdHistory it resumes from
// that resourceVersion instead and sees every later change exactly once,
// in order.
func TestWatcherResumesAcrossRestartWithoutGapOrDuplicate(t *testing.T) {
	dir := t.TempDir()
	etcd := storagetest.StartEtcdIn(t, dir)
	s := newPodStore(t, etcd.Client())
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	var want []string
	created := map[string]string{}
	create := func(s interface {
		Create(context.Context, storage.Key, runtime.Object) (runtime.Object, error)
	}, name string) {
		out, err := s.Create(ctxT(t), storage.Key{Namespace: "ns", Name: name}, newPod("ns", name, nil))
		if err != nil {
			t.Fatal(err)
		}
		rv := out.(*corev1.Pod).ResourceVersion
		created[name] = rv
		want = append(want, "ADDED "+name+" "+rv)
	}
	for i := range 5 {
		create(s, fmt.Sprintf("p%d", i))
	}
	var lastSeen string
	for range 3 {
		ev := next(t, w)
		lastSeen = ev.Object.(*corev1.Pod).ResourceVersion
	}
	want = want[3:]
	for i := 5; i < 8; i++ { // written while the client is not looking
		create(s, fmt.Sprintf("p%d", i))
	}
	s.Stop()
	etcd.Stop()

	etcd = storagetest.StartEtcdIn(t, dir)
	s = newPodStore(t, etcd.Client())
	listRev := windowStart(t, s)
	expectGone(t, mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: lastSeen}),
		fmt.Sprintf("too old resource version: %s (%d)", lastSeen, listRev))
	s.Stop()
	s = newPodStore(t, etcd.Client(), func(c *etcd3.Config) { c.Cache.ReplayEtcdHistory = true })
	for name, rv := range created {
		got, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: name}, "")
		if err != nil || got.(*corev1.Pod).ResourceVersion != rv {
			t.Fatalf("after restart %s: %v rv %v, want rv %s", name, err, got, rv)
		}
	}
	for i := 8; i < 10; i++ {
		create(s, fmt.Sprintf("p%d", i))
	}
	w = mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: lastSeen})
	for _, wnt := range want {
		if got := describe(next(t, w)); got != wnt {
			t.Fatalf("resumed watch got %q, want %q", got, wnt)
		}
	}
	expectNothing(t, w, 300*time.Millisecond)
}

// TestThreeMemberClusterKeepsServingWithLeaderStopped runs the store over a
// 3-member cluster and stops the leader mid-stream.
func TestThreeMemberClusterKeepsServingWithLeaderStopped(t *testing.T) {
	cluster := storagetest.StartCluster(t, 3)
	client := cluster.Client(t)
	s := newPodStore(t, client)
	w := mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: "0"})
	before := mustCreate(t, s, newPod("ns", "before", nil))
	if got := describe(next(t, w)); got != "ADDED before "+before.ResourceVersion {
		t.Fatalf("got %q", got)
	}
	leader := -1
	for i, ep := range cluster.Endpoints() {
		st, err := client.Status(ctxT(t), ep)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	cluster.Members[leader].Stop()
	cluster.Members[leader] = nil

	// Writes may fail while a new leader is elected; they must succeed soon after.
	var after *corev1.Pod
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		out, err := s.Create(ctx, storage.Key{Namespace: "ns", Name: "after"}, newPod("ns", "after", nil))
		cancel()
		if err == nil {
			after = out.(*corev1.Pod)
			break
		}
		if storage.IsCode(err, storage.CodeAlreadyExists) {
			t.Fatal("a failed create was written")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted 20s after losing the leader: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: "after"}, ""); err != nil {
		t.Fatal(err)
	}
	// The watch carries on: either the same stream, or a resumed one.
	select {
	case ev, ok := <-w.ResultChan():
		if ok && describe(ev) != "ADDED after "+after.ResourceVersion {
			t.Fatalf("got %q", describe(ev))
		}
		if !ok {
			w = mustWatch(t, s, storage.WatchOptions{Namespace: "ns", ResourceVersion: before.ResourceVersion})
			if got := describe(next(t, w)); got != "ADDED after "+after.ResourceVersion {
				t.Fatalf("resumed watch got %q", got)
			}
		}
	case <-time.After(15 * time.Second):
		t.Fatal("watch silent after the leader change")
	}
}

const (
	writerChildEnv = "KUBELAB_TEST_WRITER_DATA_DIR"
	writerRoundEnv = "KUBELAB_TEST_WRITER_ROUND"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(writerChildEnv); dir != "" {
		runWriterChild(dir)
		return
	}
	// No test may leave a goroutine running: a watch, a cache, a member.
	goleak.VerifyTestMain(m)
}

// runWriterChild is the process the kill test kills: it writes pods through
// the store to an fsyncing etcd and prints "ACK name count rv" after each
// write etcd acknowledged.
func runWriterChild(dir string) {
	m, err := embedetcd.Start(embedetcd.Config{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := newPodStore(&testing.T{}, m.Client())
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	for i := 0; ; i++ {
		name := fmt.Sprintf("r%s-p%05d", os.Getenv(writerRoundEnv), i)
		pod := newPod("ns", name, nil)
		pod.Annotations = map[string]string{"count": "0"}
		created, err := s.Create(ctx, storage.Key{Namespace: "ns", Name: name}, pod)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintf(out, "ACK %s 0 %s\n", name, created.(*corev1.Pod).ResourceVersion)
		out.Flush()
		rv := created.(*corev1.Pod).ResourceVersion
		for n := 1; n <= 2; n++ {
			updated, err := s.GuaranteedUpdate(ctx, storage.Key{Namespace: "ns", Name: name}, &storage.Preconditions{ResourceVersion: &rv},
				func(cur runtime.Object) (runtime.Object, error) {
					cur.(*corev1.Pod).Annotations["count"] = strconv.Itoa(n)
					return cur, nil
				})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			rv = updated.(*corev1.Pod).ResourceVersion
			fmt.Fprintf(out, "ACK %s %d %s\n", name, n, rv)
			out.Flush()
		}
	}
}

type ack struct {
	count int
	rv    string
}

// TestKilledWriterLosesNoAcknowledgedWrite kills a process with SIGKILL in
// the middle of a stream of creates and updates, then reopens its etcd:
// every acknowledged write is there with the resourceVersion it was
// acknowledged with, and a write in flight is either wholly there or absent.
func TestKilledWriterLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	dir := t.TempDir()
	acks := map[string]ack{}
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerChildEnv+"="+dir, fmt.Sprintf("%s=%d", writerRoundEnv, round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		killAfter := len(acks) + 50 + 13*round
		killed := false
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) != 4 || f[0] != "ACK" {
				continue
			}
			n, _ := strconv.Atoi(f[2])
			acks[f[1]] = ack{count: n, rv: f[3]}
			if !killed && len(acks) >= killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("round %d: writer ended before it was killed", round)
		}
		// Every round restarts etcd on the same data and checks all rounds' writes.
		verifyAcks(t, dir, acks)
	}
}

func verifyAcks(t *testing.T, dir string, acks map[string]ack) {
	t.Helper()
	m, err := embedetcd.Start(embedetcd.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	s := newPodStore(t, m.Client())
	defer s.Stop()
	for name, a := range acks {
		got, err := s.Get(ctxT(t), storage.Key{Namespace: "ns", Name: name}, "")
		if err != nil {
			t.Fatalf("acknowledged %s (count %d, rv %s) is gone: %v", name, a.count, a.rv, err)
		}
		pod := got.(*corev1.Pod)
		count, _ := strconv.Atoi(pod.Annotations["count"])
		switch {
		case count == a.count && pod.ResourceVersion == a.rv:
		case count == a.count+1 && rvOf(t, pod) > mustAtoi(t, a.rv):
			// The write in flight at the kill landed, whole.
		default:
			t.Fatalf("%s: stored count %d rv %s, acknowledged count %d rv %s", name, count, pod.ResourceVersion, a.count, a.rv)
		}
	}
	t.Logf("%d acknowledged objects intact", len(acks))
}

func mustAtoi(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
