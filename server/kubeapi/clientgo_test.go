package kubeapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/storage/etcd3"
)

// requestLog records the URLs a client asks for.
type requestLog struct {
	mu   sync.Mutex
	urls []string
	next http.RoundTripper
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.urls = append(l.urls, r.URL.String())
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

func (l *requestLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, u := range l.urls {
		if strings.Contains(u, substr) {
			n++
		}
	}
	return n
}

// TestInformerFollowsAndRelistsAfterGone: a client-go SharedInformer with
// default settings (a streaming list, sendInitialEvents) syncs, follows
// creates, updates and deletes, and after its watch is cut and its
// resourceVersion compacted away gets 410, relists and carries on. The
// watch cache is off (--watch-cache=false), so that the watch reads etcd
// and the compaction is what ends it, as with kube-apiserver: a watch
// cache's window does not move with compaction.
func TestInformerFollowsAndRelistsAfterGone(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t, func(c *apitest.Config) { c.WatchFromEtcd = true })
	cfg, err := clientcmd.BuildConfigFromFlags("", lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	client := kubernetes.NewForConfigOrDie(cfg)

	events := make(chan string, 100)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("internals-demo"))
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*corev1.Pod).Name },
		UpdateFunc: func(old, obj any) {
			if old.(*corev1.Pod).ResourceVersion != obj.(*corev1.Pod).ResourceVersion {
				events <- "update " + obj.(*corev1.Pod).Name
			}
		},
		DeleteFunc: func(obj any) { events <- "delete " + obj.(*corev1.Pod).Name },
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop only when ctx is done:
	// cancel first, or the test waits out ctx's whole minute.
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	if n := len(inf.GetStore().List()); n != len(demoPods) {
		t.Fatalf("synced %d pods, want %d", n, len(demoPods))
	}
	if log.count("sendInitialEvents=true") != 1 {
		t.Fatalf("informer did not use a streaming list: %v", log.urls)
	}
	expect := func(want string) {
		t.Helper()
		for {
			select {
			case got := <-events:
				if got == want {
					return
				}
				if !strings.HasPrefix(got, "add ") { // the initial adds
					t.Fatalf("got %q, want %q", got, want)
				}
			case <-ctx.Done():
				t.Fatalf("informer never saw %q", want)
			}
		}
	}
	pods := client.CoreV1().Pods("internals-demo")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "informed"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("add informed")
	got, err := pods.Get(ctx, "informed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Labels = map[string]string{"seen": "yes"}
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update informed")
	if err := pods.Delete(ctx, "informed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete informed")

	// Move etcd's clock on elsewhere, compact past the informer's last
	// resourceVersion, and cut its watch: it must get 410 and relist.
	for _, name := range []string{"tick", "tock"} {
		if _, err := client.CoreV1().ConfigMaps("internals-demo").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := etcd3.NewCompactor(lab.EtcdClient(), nil).CompactNow(ctx); err != nil {
		t.Fatal(err)
	}
	podStore, _ := lab.API().Store(corev1.SchemeGroupVersion.WithResource("pods"))
	podStore.CloseWatchers()
	deadline := time.Now().Add(30 * time.Second)
	for log.count("sendInitialEvents=true") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("informer did not relist after 410: %v", log.urls)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pod.Name = "after-relist"
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("add after-relist")
}
