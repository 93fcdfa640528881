package etcd3_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// benchWriters is the number of concurrent writers in the create benchmarks.
const benchWriters = 16

// BenchmarkCreate compares creates through the store (encode to kube
// protobuf, transaction guarded by ModRevision, resourceVersion back) with
// the bare etcd transaction of the same value size and concurrency, on the
// same kind of etcd, in the same run. Each variant gets a fresh etcd, so
// neither pays for the other's data.
func BenchmarkCreate(b *testing.B) {
	value, err := storage.NewProtobufCodec(scheme(), corev1.SchemeGroupVersion).Encode(newPod("bench", "p-000000000", map[string]string{"app": "bench"}))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("value size %d bytes, %d writers", len(value), benchWriters)

	var seq atomic.Int64
	b.Run("raw-etcd-txn", func(b *testing.B) {
		etcd := storagetest.StartEtcd(b)
		runParallel(b, func(ctx context.Context) error {
			key := fmt.Sprintf("/registry/raw/bench/p-%09d", seq.Add(1))
			_, err := etcd.Client().Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, string(value))).
				Commit()
			return err
		})
	})
	b.Run("store", func(b *testing.B) {
		s := newPodStore(b, storagetest.StartEtcd(b).Client())
		runParallel(b, func(ctx context.Context) error {
			name := fmt.Sprintf("p-%09d", seq.Add(1))
			_, err := s.Create(ctx, storage.Key{Namespace: "bench", Name: name}, newPod("bench", name, map[string]string{"app": "bench"}))
			return err
		})
	})
}

func runParallel(b *testing.B, op func(context.Context) error) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range benchWriters {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}

// BenchmarkWatchDelivery measures write acknowledged → event received for
// every one of 1,000 watchers of the same namespace, through the store's
// watch cache, and the same for 1,000 bare etcd watchers as the baseline.
func BenchmarkWatchDelivery(b *testing.B) {
	const watchers = 1000
	etcd := storagetest.StartEtcd(b)
	s := newPodStore(b, etcd.Client())
	var seq atomic.Int64

	b.Run("raw-etcd-watch", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		recv := make(chan time.Time, watchers)
		for range watchers {
			wch := etcd.Client().Watch(ctx, "/registry/rawwatch/", clientv3.WithPrefix())
			go func() {
				for resp := range wch {
					for range resp.Events {
						recv <- time.Now()
					}
				}
			}()
		}
		time.Sleep(time.Second) // let every watch register
		measureDelivery(b, watchers, recv, func(int) error {
			_, err := etcd.Client().Put(context.Background(), fmt.Sprintf("/registry/rawwatch/k%d", seq.Add(1)), "v")
			return err
		})
	})
	b.Run("store", func(b *testing.B) {
		recv := make(chan time.Time, watchers)
		noInitialEvents := false
		for range watchers {
			// Changes from now on only: no synthetic ADDED for earlier rounds' pods.
			w, err := s.Watch(context.Background(), storage.WatchOptions{Namespace: "watch",
				SendInitialEvents: &noInitialEvents, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Stop()
			go func() {
				for range w.ResultChan() {
					recv <- time.Now()
				}
			}()
		}
		measureDelivery(b, watchers, recv, func(int) error {
			name := fmt.Sprintf("w-%09d", seq.Add(1))
			_, err := s.Create(context.Background(), storage.Key{Namespace: "watch", Name: name}, newPod("watch", name, nil))
			return err
		})
	})
}

// measureDelivery writes b.N times, one at a time, and after each waits for
// every watcher's event, recording each delivery's delay after the write's
// ack (0 when the event beat the ack) and after the write was issued.
func measureDelivery(b *testing.B, watchers int, recv <-chan time.Time, write func(int) error) {
	var lat, fromIssue []time.Duration
	b.ResetTimer()
	for i := range b.N {
		issued := time.Now()
		if err := write(i); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		for range watchers {
			select {
			case at := <-recv:
				lat = append(lat, max(0, at.Sub(acked)))
				fromIssue = append(fromIssue, at.Sub(issued))
			case <-time.After(10 * time.Second):
				b.Fatal("a watcher got no event within 10s")
			}
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(lat, 0.50), "p50-ms")
	b.ReportMetric(q(lat, 0.99), "p99-ms")
	b.ReportMetric(q(fromIssue, 0.99), "p99-from-issue-ms")
}

// BenchmarkExactList lists 1,000 pods at an exact resourceVersion, 100
// events back: from the watch cache (rebuilt from its objects and those
// events, as kubelab serves kube's ListFromCacheSnapshot) and from etcd
// (the same store with the cache off, the baseline), whole and as a first
// page of 100, on one etcd in the same run.
func BenchmarkExactList(b *testing.B) {
	client := storagetest.StartEtcd(b).Client()
	cached := newPodStore(b, client)
	fromEtcd := newPodStore(b, client, fromEtcd)
	var at int64
	for i := range 1000 {
		at = rvOf(b, mustCreate(b, cached, newPod("bench", fmt.Sprintf("p-%04d", i), map[string]string{"app": "bench"})))
	}
	for i := range 100 {
		relabel(b, cached, "bench", fmt.Sprintf("p-%04d", i), map[string]string{"app": "bench", "round": "2"})
	}
	waitFor(b, "the cache to record the relabels", func() bool { return cached.Cache().ResourceVersion() >= at+100 })
	for _, limit := range []int64{0, 100} {
		for name, s := range map[string]*etcd3.Store{"cache": cached, "etcd": fromEtcd} {
			b.Run(fmt.Sprintf("%s/limit=%d", name, limit), func(b *testing.B) {
				opts := storage.ListOptions{Namespace: "bench", ResourceVersion: fmt.Sprint(at), Limit: limit}
				want := int(limit)
				if limit == 0 {
					opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
					want = 1000
				}
				b.ReportAllocs()
				for b.Loop() {
					res, err := s.List(context.Background(), opts)
					if err != nil || len(res.Items) != want {
						b.Fatalf("%v, %d items", err, len(res.Items))
					}
				}
			})
		}
	}
}
