package crd_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/apitest"
)

var widgets = schema.GroupVersionResource{Group: "lab.example.com", Version: "v1", Resource: "widgets"}

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

func restConfig(t *testing.T, lab served) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return cfg
}

func widget(name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": size}}}
	u.SetAPIVersion("lab.example.com/v1")
	u.SetKind("Widget")
	u.SetName(name)
	return u
}

// TestDynamicInformer: client-go's dynamic client does CRUD on a custom
// resource, and a dynamic informer syncs with a streaming list, follows
// changes, and relists after its watch gets 410 from a compaction. The
// watch cache is off (--watch-cache=false), so that the watch reads etcd
// and the compaction is what ends it, as with kube-apiserver.
func TestDynamicInformer(t *testing.T) {
	t.Parallel()
	lab := startAPI(t, func(c *apitest.Config) { c.WatchFromEtcd = true })
	applyCRD(t, lab, widgetsCRD)
	cfg := restConfig(t, lab)
	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	client := dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := client.Resource(widgets).Namespace("internals-demo")

	if _, err := ws.Create(ctx, widget("first", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Create(ctx, widget("first", 1), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	_, err := ws.Create(ctx, widget("tiny", 0), metav1.CreateOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 422 || len(status.Status().Details.Causes) == 0 ||
		status.Status().Details.Causes[0].Field != "spec.size" {
		t.Fatalf("invalid create: %v, want 422 with a cause on spec.size", err)
	}

	events := make(chan string, 100)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "internals-demo", nil)
	inf := factory.ForResource(widgets).Informer()
	name := func(obj any) string { return obj.(*unstructured.Unstructured).GetName() }
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { events <- "add " + name(obj) },
		UpdateFunc: func(_, obj any) { events <- "update " + name(obj) },
		DeleteFunc: func(obj any) { events <- "delete " + name(obj) },
	})
	factory.Start(ctx.Done())
	defer func() {
		cancel() // the informer stops on ctx, and Shutdown waits for it
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
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
			case <-ctx.Done():
				t.Fatalf("informer never saw %q", want)
			}
		}
	}
	expect("add first")
	if _, err := ws.Patch(ctx, "first", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update first")
	got, err := ws.Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 2 || got.GetGeneration() != 2 {
		t.Fatalf("after patch: size %d generation %d", size, got.GetGeneration())
	}
	if err := ws.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete first")

	// Compact past the informer's resourceVersion and cut its watch: it
	// must get 410, relist and carry on.
	for _, n := range []string{"tick", "tock"} {
		if _, err := ws.Create(ctx, widget(n, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expect("add " + n)
	}
	// Move etcd's revision on with writes the informer does not see.
	configMaps := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("internals-demo")
	for _, n := range []string{"tick", "tock"} {
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetName(n)
		if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	compactNow(ctx, t, lab)
	store, ok := lab.API().Store(widgets)
	if !ok {
		t.Fatal("no store for widgets")
	}
	store.CloseWatchers()
	deadline := time.Now().Add(30 * time.Second)
	for log.count("sendInitialEvents=true") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("informer did not relist: %v", log.urls)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := ws.Create(ctx, widget("after-relist", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("add after-relist")
	if n := len(inf.GetStore().List()); n != 3 {
		t.Fatalf("informer holds %d widgets, want 3", n)
	}
}
