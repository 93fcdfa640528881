package topology

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/storage/storagetest"
)

const demoNamespace = "internals-demo"

// TestComposeTopology runs what `docker compose up` runs, as processes: a
// 3-member etcd cluster and two kubelab servers over it. Writes through one
// server reach watchers on the other with the same resourceVersions; the
// servers keep serving with a follower down and then with the leader down;
// and after everything is stopped and restarted on the same data, every
// acknowledged write is there with its acknowledged resourceVersion.
func TestComposeTopology(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster and builds and runs two kubelab processes")
	}
	kubelabBinary(t)
	cluster := storagetest.StartCluster(t, 3)
	a := newServer(t, "a", cluster.Endpoints())
	b := newServer(t, "b", cluster.Endpoints())
	// At once, on a fresh etcd: both seed the lesson's demo.
	startServers(t, a, b)
	checkDemo(t, cluster.Client(t), a, b)

	const ns = "topology"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	created, err := a.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace through a: %v", err)
	}
	from := rvOf(t, created)
	l := &ledger{}
	wa, wb := startWatch(t, a, ns, from), startWatch(t, b, ns, from)

	t.Log("write through a, watch through b")
	for i := range 20 {
		create(t, l, a, ns, fmt.Sprintf("a-%02d", i))
	}
	wb.check(t, "writes through a", l)
	wa.check(t, "writes through a", l)
	checkReads(t, l, ns, a, b)

	follower := member(t, cluster, false)
	t.Logf("stop etcd member %s, a follower", cluster.Configs[follower].Name)
	cluster.Members[follower].Stop()
	writeLoad(t, l, ns, "follower-down", a, b)
	wb.check(t, "a follower down", l)
	wa.check(t, "a follower down", l)
	checkReads(t, l, ns, a, b)
	if n := l.failureCount(); n > 0 {
		t.Errorf("with a follower down, %d write(s) failed before one was acknowledged: %q", n, l.failures)
	}

	restartMembers(t, cluster, follower)
	waitHealthy(t, cluster)
	leader := member(t, cluster, true)
	t.Logf("stop etcd member %s, the leader", cluster.Configs[leader].Name)
	cluster.Members[leader].Stop()
	before := l.failureCount()
	writeLoad(t, l, ns, "leader-down", a, b)
	wb.check(t, "the leader down", l)
	wa.check(t, "the leader down", l)
	checkReads(t, l, ns, a, b)
	if n := l.failureCount() - before; n > 0 {
		// A write in flight while etcd elects a new leader may fail, as it
		// may with kube-apiserver; every write was then retried until one
		// was acknowledged.
		t.Logf("with the leader down, %d write attempt(s) failed and were retried: %q", n, l.failures[before:])
	}

	// A new watch from before the first write gets every write from the
	// history the server kept while serving them.
	wn := startWatch(t, b, ns, from)
	wn.check(t, "a new watch from the start", l)
	t.Log("stop both servers and the whole etcd cluster, then start everything again on the same data")
	// Watches end first: a client that reconnects while a server is
	// stopping is TestStopWithReconnectingWatchers's subject, not this one's.
	wa.stop()
	wb.stop()
	wn.stop()
	a.Stop(t)
	b.Stop(t)
	for _, m := range cluster.Members {
		m.Stop()
	}
	restartMembers(t, cluster, 0, 1, 2)
	startServers(t, a, b)
	checkReads(t, l, ns, a, b)
	// As kube-apiserver's, a restarted server's watch cache starts at the
	// revision it lists at: a watch from before the restart gets 410, and
	// the client lists again (checkReads found every write in the list).
	expectGone(t, a, ns, from)
	expectGone(t, b, ns, from)
	checkDemo(t, cluster.Client(t), a, b)
	t.Logf("%d acknowledged writes found after the restart", len(l.sorted()))
}

// member returns the index of the cluster's leader, or of a running follower.
func member(t *testing.T, c *storagetest.Cluster, leader bool) int {
	t.Helper()
	client := c.Client(t)
	for i, cfg := range c.Configs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := client.Status(ctx, cfg.ClientURL)
		cancel()
		if err != nil {
			continue // stopped
		}
		if (st.Leader == st.Header.MemberId) == leader {
			return i
		}
	}
	t.Fatalf("no running etcd member is a %s", map[bool]string{true: "leader", false: "follower"}[leader])
	return -1
}

// waitHealthy waits until every member answers a linearizable read, as the
// compose file's `etcdctl endpoint health` checks.
func waitHealthy(t *testing.T, c *storagetest.Cluster) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for i, m := range c.Members {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := m.Ready(ctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("etcd member %s not healthy after %s: %v", c.Configs[i].Name, wait, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// checkDemo checks the lesson's demo was seeded exactly once although every
// server seeds it on start: each server lists the same pods with the same
// resourceVersions, etcd's history holds one ADDED per pod and nothing else,
// and ssa-demo has one apply by manager-a.
func checkDemo(t *testing.T, etcd *clientv3.Client, servers ...*server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var first []string
	for _, s := range servers {
		list, err := s.Client.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list the demo through %s: %v", s.Name, err)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Name+"@"+p.ResourceVersion)
		}
		if len(got) == 0 {
			t.Errorf("kubelab %s serves no demo pods", s.Name)
		}
		if first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("the demo through %s is %q, through %s %q", s.Name, got, servers[0].Name, first)
		}
	}

	// etcd's own history, from its first revision: the API's watch cache
	// starts at the revision it listed at, as kube-apiserver's does, so a
	// watch through it from resourceVersion 1 gets 410.
	history := etcd.Watch(ctx, "/registry/pods/"+demoNamespace+"/", clientv3.WithPrefix(), clientv3.WithRev(1))
	created := map[string]int{}
	for len(created) < len(first) {
		select {
		case resp := <-history:
			if err := resp.Err(); err != nil {
				t.Fatalf("etcd's history of the demo: %v", err)
			}
			for _, ev := range resp.Events {
				name := strings.TrimPrefix(string(ev.Kv.Key), "/registry/pods/"+demoNamespace+"/")
				if !ev.IsCreate() {
					t.Fatalf("etcd's history of the demo has a %s of %s at %d before every pod was made: seeded twice?", ev.Type, name, ev.Kv.ModRevision)
				}
				created[name]++
				if created[name] > 1 {
					t.Errorf("etcd's history makes %s twice", name)
				}
			}
		case <-ctx.Done():
			t.Fatalf("etcd's history of the demo: %d of %d pods after %s", len(created), len(first), wait)
		}
	}
	// A second seeding would make a pod again after a delete.
	select {
	case resp := <-history:
		for _, ev := range resp.Events {
			if ev.IsCreate() || ev.Type == clientv3.EventTypeDelete {
				t.Errorf("etcd's history has a %s of %s after the seeding", ev.Type, ev.Kv.Key)
			}
		}
	case <-time.After(time.Second):
	}

	ssa, err := servers[0].Client.CoreV1().Pods(demoNamespace).Get(ctx, "ssa-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ssa-demo: %v", err)
	}
	var managers []string
	for _, m := range ssa.ManagedFields {
		if m.Manager == "kubelet" && m.Subresource == "status" {
			continue // the simulated node's status, as on a real cluster
		}
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	if !slices.Equal(managers, []string{"manager-a/Apply"}) {
		t.Errorf("ssa-demo is managed by %s, want manager-a/Apply alone", strings.Join(managers, ", "))
	}
}

// expectGone checks that a watch through s from resourceVersion from is
// too old for s's watch cache: kube's 410 with its message.
func expectGone(t *testing.T, s *server, ns string, from int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := s.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: fmt.Sprint(from)})
	if err != nil {
		t.Fatalf("watch through %s from %d: %v", s.Name, from, err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		st := apierrors.FromObject(ev.Object)
		if ev.Type != watch.Error || !apierrors.IsResourceExpired(st) || !strings.Contains(st.Error(), fmt.Sprintf("too old resource version: %d (", from)) {
			t.Errorf("watch through %s from %d, before the restart: %s %v, want 410 too old resource version", s.Name, from, ev.Type, st)
		}
	case <-ctx.Done():
		t.Fatalf("watch through %s from %d: nothing after %s", s.Name, from, wait)
	}
}
