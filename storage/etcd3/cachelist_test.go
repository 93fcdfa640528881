package etcd3_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// etcdState is what etcd itself held under prefix at rev: "name@modRevision"
// in key order, the truth an exact list must show.
func etcdState(t *testing.T, client *clientv3.Client, prefix string, rev int64, keep func(*corev1.Pod) bool) []string {
	t.Helper()
	resp, err := client.Get(ctxT(t), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		t.Fatal(err)
	}
	codec := storage.NewProtobufCodec(scheme(), corev1.SchemeGroupVersion)
	var out []string
	for _, kv := range resp.Kvs {
		pod := &corev1.Pod{}
		if err := codec.Decode(kv.Value, pod); err != nil {
			t.Fatal(err)
		}
		if keep == nil || keep(pod) {
			out = append(out, fmt.Sprintf("%s@%d", pod.Name, kv.ModRevision))
		}
	}
	return out
}

func listed(items []*corev1.Pod) []string {
	var out []string
	for _, p := range items {
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	return out
}

// listAll reads every page of a list, following its continue tokens.
func listAll(t *testing.T, s *etcd3.Store, opts storage.ListOptions) ([]*corev1.Pod, error) {
	t.Helper()
	var all []*corev1.Pod
	for {
		res, err := s.List(ctxT(t), opts)
		if err != nil {
			return all, err
		}
		for _, o := range res.Items {
			all = append(all, o.(*corev1.Pod))
		}
		if res.Continue == "" {
			return all, nil
		}
		opts = storage.ListOptions{Namespace: opts.Namespace, Limit: opts.Limit, Continue: res.Continue, Predicate: opts.Predicate}
	}
}

// TestExactListsFromTheWatchCache: kube-apiserver 1.37 serves an exact
// list, and a continue token, from its watch cache's snapshots. After a
// compaction behind the server's back (etcdctl compact), every revision
// the cache holds is still listed exactly as etcd held it, whole, by
// pages, and through a selector; once kubelab's own compactor (as kube's)
// compacts, the same lists go to etcd and get its 410.
func TestExactListsFromTheWatchCache(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	client := etcd.Client()
	s := newPodStore(t, client)
	listRev := windowStart(t, s)

	// Creates, label changes and deletes in two namespaces, at random.
	rnd := rand.New(rand.NewPCG(17, 1))
	revs := []int64{listRev}
	live := map[string]bool{}
	for i := range 60 {
		ns := []string{"ns", "other"}[rnd.IntN(2)]
		name := fmt.Sprintf("p%d", rnd.IntN(12))
		key := ns + "/" + name
		var rv int64
		switch {
		case !live[key]:
			rv = rvOf(t, mustCreate(t, s, newPod(ns, name, map[string]string{"n": strconv.Itoa(i % 3)})))
			live[key] = true
		case rnd.IntN(3) == 0:
			out, err := s.Delete(ctxT(t), storage.Key{Namespace: ns, Name: name}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rv = rvOf(t, out)
			live[key] = false
		default:
			rv = rvOf(t, relabel(t, s, ns, name, map[string]string{"n": strconv.Itoa(i % 3)}))
		}
		revs = append(revs, rv)
	}
	evenN := labels.SelectorFromSet(labels.Set{"n": "0"})
	want := map[int64][2][]string{}
	for _, rev := range revs {
		want[rev] = [2][]string{
			etcdState(t, client, "/registry/pods/ns/", rev, nil),
			etcdState(t, client, "/registry/pods/ns/", rev, func(p *corev1.Pod) bool { return evenN.Matches(labels.Set(p.Labels)) }),
		}
	}
	// A first page at a revision, for its continue token.
	page, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(revs[20]), Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v %q", err, page.Continue)
	}

	// Behind the server's back: etcd forgets every revision listed above.
	if _, err := client.Compact(ctxT(t), revs[len(revs)-1]); err != nil {
		t.Fatal(err)
	}
	t.Run("OK after etcdctl compact", func(t *testing.T) {
		for _, rev := range revs {
			rv := strconv.FormatInt(rev, 10)
			whole, err := listAll(t, s, storage.ListOptions{Namespace: "ns", ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			if err != nil || fmt.Sprint(listed(whole)) != fmt.Sprint(want[rev][0]) {
				t.Fatalf("exact list at %d: %v %v, want %v", rev, err, listed(whole), want[rev][0])
			}
			paged, err := listAll(t, s, storage.ListOptions{Namespace: "ns", ResourceVersion: rv, Limit: 2})
			if err != nil || fmt.Sprint(listed(paged)) != fmt.Sprint(want[rev][0]) {
				t.Fatalf("pages from %d: %v %v, want %v", rev, err, listed(paged), want[rev][0])
			}
			selected, err := listAll(t, s, storage.ListOptions{Namespace: "ns", ResourceVersion: rv, Limit: 1,
				Predicate: storage.Predicate{Label: evenN}})
			if err != nil || fmt.Sprint(listed(selected)) != fmt.Sprint(want[rev][1]) {
				t.Fatalf("selected pages from %d: %v %v, want %v", rev, err, listed(selected), want[rev][1])
			}
		}
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 1, Continue: page.Continue})
		if err != nil || res.ResourceVersion != revs[20] {
			t.Fatalf("continue token at %d: %v, resourceVersion %d", revs[20], err, res.ResourceVersion)
		}
	})

	t.Run("ErrAfterTheServersCompaction", func(t *testing.T) {
		if _, err := etcd3.NewCompactor(client, quietLogger()).CompactNow(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		_, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(revs[20]), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if !apierrors.IsResourceExpired(err) || err.(*storage.Error).Status().Message != "The resourceVersion for the provided list is too old." {
			t.Fatalf("exact list below the compaction: %v", err)
		}
		_, err = s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 1, Continue: page.Continue})
		if !apierrors.IsResourceExpired(err) || !strings.HasPrefix(err.(*storage.Error).Status().Message, "The provided continue parameter is too old") {
			t.Fatalf("continue token below the compaction: %v", err)
		}
	})
}

// TestExactListBelowAFullHistoryGoesToEtcd: once the history has been
// full, kube keeps no snapshot below its oldest event, so an exact list
// from before it reads etcd (here compacted: 410), while one at the oldest
// event is still served from the cache.
func TestExactListBelowAFullHistoryGoesToEtcd(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	listRev := windowStart(t, s)
	var first, last int64
	for i := range 100 { // exactly the history's 100: full, nothing dropped yet
		last = rvOf(t, mustCreate(t, s, newPod("ns", fmt.Sprintf("p%03d", i), nil)))
		if i == 0 {
			first = last
		}
	}
	waitFor(t, "the cache to record the last create", func() bool { return s.Cache().ResourceVersion() >= last })
	if _, err := etcd.Client().Compact(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	exact := func(rev int64) (*storage.ListResult, error) {
		return s.List(ctxT(t), storage.ListOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(rev), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	}
	if _, err := exact(listRev); !apierrors.IsResourceExpired(err) {
		t.Fatalf("exact list at the cache's list, below a full history: %v, want etcd's 410", err)
	}
	if res, err := exact(first); err != nil || fmt.Sprint(names(res.Items)) != "[p000]" {
		t.Fatalf("exact list at the oldest event: %v", err)
	}
}

// TestAnotherServersCompactionEndsTheCachesExactLists: an API server
// sharing the etcd (here a client of its own, as another process) runs
// kube's compactor round: it writes the revision to compact_rev_key, then
// compacts. This server's caches learn it from the key, as kube's do, and
// send exact lists below it to etcd.
func TestAnotherServersCompactionEndsTheCachesExactLists(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	windowStart(t, s)
	m := rvOf(t, mustCreate(t, s, newPod("ns", "m", nil)))
	last := rvOf(t, mustCreate(t, s, newPod("ns", "later", nil)))
	waitFor(t, "the cache to record the last create", func() bool { return s.Cache().ResourceVersion() >= last })
	other, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL()}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	exact := func() error {
		_, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", ResourceVersion: fmt.Sprint(m), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		return err
	}
	if _, err := other.Compact(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	if err := exact(); err != nil {
		t.Fatalf("exact list after a compaction that wrote no compact_rev_key: %v", err)
	}
	if _, err := other.Put(ctxT(t), "compact_rev_key", strconv.FormatInt(last, 10)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exact list to go to etcd and get 410", func() bool { return apierrors.IsResourceExpired(exact()) })
}
