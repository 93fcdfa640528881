package kubeapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/controller/namespace"
	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
)

func clientset(t *testing.T, lab served, contentType string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		cfg.ContentType = contentType
		cfg.AcceptContentTypes = contentType
	}
	cfg.QPS = -1 // no client-side rate limit
	return kubernetes.NewForConfigOrDie(cfg)
}

// TestProtobufClient: client-go speaking protobuf (as kube's own
// components do) creates, gets, lists and watches.
func TestProtobufClient(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	client := clientset(t, lab, runtime.ContentTypeProtobuf)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := client.CoreV1().ConfigMaps("internals-demo")
	// Watch only the ConfigMap this test makes: on a whole kubelab the
	// namespace also holds the root CA's.
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=proto"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proto"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "proto", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := client.CoreV1().Pods("internals-demo").List(ctx, metav1.ListOptions{Limit: 4})
	if err != nil || len(list.Items) != 4 || list.Continue == "" || list.ResourceVersion == "" {
		t.Fatalf("list: %v %d items, continue %q", err, len(list.Items), list.Continue)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "proto" {
			t.Fatalf("watch got %v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no watch event over protobuf")
	}
	// A second watcher from here: the two share each event's encoding,
	// which must still say which event it is.
	w2, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=proto", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	got.Data["k"] = "v2"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	expect := func(i int, watcher watch.Interface, want watch.EventType) {
		t.Helper()
		select {
		case ev := <-watcher.ResultChan():
			cm, _ := ev.Object.(*corev1.ConfigMap)
			if ev.Type != want || cm == nil || cm.Data["k"] != "v2" || rv(cm.ResourceVersion) < rv(updated.ResourceVersion) {
				t.Fatalf("watcher %d: got %s %+v, want %s of the updated ConfigMap", i, ev.Type, ev.Object, want)
			}
		case <-ctx.Done():
			t.Fatalf("watcher %d: no %s over protobuf", i, want)
		}
	}
	expect(1, w, watch.Modified)
	expect(2, w2, watch.Modified)
	// A fresh watch starts with the same stored object as a synthetic
	// ADDED: the encoding shared with the MODIFIED above is not its.
	w3, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=proto"})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	expect(3, w3, watch.Added)
	if err := cms.Delete(ctx, "proto", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, watcher := range []watch.Interface{w, w2, w3} {
		expect(i+1, watcher, watch.Deleted)
	}
	if _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("missing object: %v", err)
	}
}

// TestLegacyWatchPathAndSingleObjectWatch: /api/v1/watch/... and a watch
// on one named object.
func TestLegacyWatchPathAndSingleObjectWatch(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	for _, path := range []string{
		"/api/v1/watch/namespaces/internals-demo/pods/ssa-demo?timeoutSeconds=1",
		"/api/v1/namespaces/internals-demo/pods?watch=true&fieldSelector=metadata.name%3Dssa-demo&timeoutSeconds=1",
	} {
		resp, body := do(t, lab, "GET", path, "", "")
		events := parseEvents(t, string(body))
		if resp.StatusCode != 200 || len(events) != 1 || events[0].meta("name") != "ssa-demo" {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	resp, body := do(t, lab, "GET", "/api/v1/watch/pods?timeoutSeconds=1", "", "")
	if events := parseEvents(t, string(body)); resp.StatusCode != 200 || len(events) != len(demoPods) {
		t.Fatalf("all-namespace legacy watch: %d, %d events", resp.StatusCode, len(events))
	}
}

// TestTableWatchAsKubectlGetWatch: kubectl get -w asks for Tables; the
// first event carries the columns, later ones only rows.
func TestTableWatchAsKubectlGetWatch(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	req, _ := http.NewRequest("GET", lab.URL()+podsPath+"?watch=1&timeoutSeconds=2", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var ev struct {
			Type   string
			Object metav1.Table
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || (n == 0) != (len(ev.Object.ColumnDefinitions) > 0) {
			t.Fatalf("event %d: %s", n, sc.Bytes())
		}
		n++
	}
	if n != len(demoPods) {
		t.Fatalf("%d table events", n)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	before := listRV(t, lab)
	resp, body := do(t, lab, "POST", podsPath+"?dryRun=All", "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dry"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	if resp.StatusCode != 201 || !strings.Contains(string(body), `"restartPolicy":"Always"`) {
		t.Fatalf("dry-run create: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, lab, "DELETE", podsPath+"/ssa-demo?dryRun=All", "", ""); resp.StatusCode != 200 {
		t.Fatalf("dry-run delete: %d", resp.StatusCode)
	}
	if after := listRV(t, lab); after != before {
		t.Fatalf("dry run wrote: revision %s → %s", before, after)
	}
	if resp, _ := do(t, lab, "GET", podsPath+"/dry", "", ""); resp.StatusCode != 404 {
		t.Fatal("dry-run pod exists")
	}
}

func TestStatusSubresourceAndDeleteCollection(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	// The namespace controller empties a deleted namespace: run alone, as
	// the server runs it. Whether its goroutines end with it is not
	// checked here: the whole servers of this package's other tests run
	// the same controller side by side (its own package's tests check).
	reg := lab.API().Registry()
	registrytest.Run(t, registry.Controller("namespace-controller"), namespace.New(registrytest.Core(t, reg, "namespaces"), reg.NamespacedStores, nil).Run)
	client := clientset(t, lab, "")
	ctx := context.Background()
	pods := client.CoreV1().Pods("internals-demo")
	pod, err := pods.Get(ctx, "ssa-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Spec.Containers[0].Image = "ignored:by-status"
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := pods.Get(ctx, "ssa-demo", metav1.GetOptions{})
	if got.Status.Phase != corev1.PodRunning || got.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("after /status: phase %s image %s", got.Status.Phase, got.Spec.Containers[0].Image)
	}
	got.Status.Phase = corev1.PodFailed
	got.Labels["touched"] = "yes"
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = pods.Get(ctx, "ssa-demo", metav1.GetOptions{})
	if got.Status.Phase != corev1.PodRunning || got.Labels["touched"] != "yes" {
		t.Fatalf("main resource update changed status or lost labels: %s %v", got.Status.Phase, got.Labels)
	}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=gc-demo4"}); err != nil {
		t.Fatal(err)
	}
	list, _ := pods.List(ctx, metav1.ListOptions{})
	if len(list.Items) != len(demoPods)-2 {
		t.Fatalf("%d pods left after deleting app=gc-demo4", len(list.Items))
	}
	// Deleting the namespace leaves nothing of it in etcd.
	if err := client.CoreV1().Namespaces().Delete(ctx, "internals-demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller empties it: soon nothing of it is left.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := lab.EtcdClient().Get(ctx, "/registry/pods/internals-demo/", clientv3Prefix()...)
		if err == nil && len(resp.Kvs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v: %d pods left in etcd", err, len(resp.Kvs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPartialObjectMetadata: the metadata-only client (the garbage
// collector's) lists and gets.
func TestPartialObjectMetadata(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	cfg, _ := clientcmd.BuildConfigFromFlags("", lab.KubeconfigPath())
	mc := metadata.NewForConfigOrDie(cfg)
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	list, err := mc.Resource(gvr).Namespace("internals-demo").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != len(demoPods) || list.Items[0].Labels["app"] == "" {
		t.Fatalf("metadata list: %v %+v", err, list)
	}
	one, err := mc.Resource(gvr).Namespace("internals-demo").Get(context.Background(), "ssa-demo", metav1.GetOptions{})
	if err != nil || one.Name != "ssa-demo" || one.Labels["app"] != "ssa-demo" {
		t.Fatalf("metadata get: %v %+v", err, one)
	}
}

func clientv3Prefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }

// TestShutdownEndsWatchesCleanly: stopping the server ends open watch
// streams at once (they do not hold the shutdown up until its timeout).
func TestShutdownEndsWatchesCleanly(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	resp, err := http.Get(lab.URL() + podsPath + "?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The stream is read until it ends; the server stops once the watch
	// has delivered its initial events, so that what it delivered does not
	// depend on how far it had got when the stop came.
	ended, delivered := make(chan int, 1), make(chan struct{})
	go func() {
		n := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if n++; n == len(demoPods) {
				close(delivered)
			}
		}
		ended <- n
	}()
	select {
	case <-delivered:
	case n := <-ended:
		t.Fatalf("the watch ended after %d events, before the stop", n)
	case <-time.After(30 * time.Second):
		t.Fatal("the watch's initial events did not come")
	}
	// A watch that held the stop up would hold it until this deadline:
	// the bound below is half of it, wide of a loaded machine's stop.
	const stopWithin = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), stopWithin)
	defer cancel()
	start := time.Now()
	if err := lab.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > stopWithin/2 {
		t.Fatalf("shutdown took %v with a watch open", d)
	}
	select {
	case n := <-ended:
		if n != len(demoPods) {
			t.Fatalf("watch delivered %d events before ending", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch stream still open after shutdown")
	}
}

// testAggregatedDiscovery: client-go's discovery (aggregated v2 by default)
// sees every resource from /api and /apis alone; plain JSON still gets the
// legacy documents.
func testAggregatedDiscovery(t *testing.T, lab *kubelabtest.Lab) {
	cfg, _ := clientcmd.BuildConfigFromFlags("", lab.KubeconfigPath())
	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	dc := kubernetes.NewForConfigOrDie(cfg).Discovery()
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "v1/namespaces", "rbac.authorization.k8s.io/v1/clusterroles"} {
		if !found[want] {
			t.Errorf("discovery lacks %s: %v", want, found)
		}
	}
	if n := len(log.urls); n != 2 {
		t.Errorf("aggregated discovery took %d requests, want 2 (/api, /apis): %v", n, log.urls)
	}
	resp, body := do(t, lab, "GET", "/apis", "", "", "Accept", "application/json")
	if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"kind":"APIGroupList"`) {
		t.Fatalf("legacy /apis: %s %s", resp.Header.Get("Content-Type"), body)
	}
}

// TestWatchDeliversEveryQueuedEvent: a watch that starts with many more
// events than one flush carries delivers every one, in order (a flush that
// dropped the event it had just taken off the queue once lost every 65th).
func TestWatchDeliversEveryQueuedEvent(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	client := clientset(t, lab, "")
	ctx := context.Background()
	// ConfigMaps already there (on a whole kubelab, the root CA's) come
	// first in a watch from 0.
	before, err := client.CoreV1().ConfigMaps("internals-demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := client.CoreV1().ConfigMaps("internals-demo").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-first"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < n-1; i += 10 {
				if _, err := client.CoreV1().ConfigMaps("internals-demo").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}}, metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, rv := range []string{"0", first.ResourceVersion} {
		_, body := do(t, lab, "GET", "/api/v1/namespaces/internals-demo/configmaps?watch=1&timeoutSeconds=2&resourceVersion="+rv, "", "")
		events := parseEvents(t, string(body))
		want := n + len(before.Items)
		if rv != "0" {
			want = n - 1 // every create after the first
		}
		if len(events) != want {
			t.Fatalf("watch from %s delivered %d events, want %d", rv, len(events), want)
		}
		for i := 1; rv != "0" && i < len(events); i++ { // history comes in revision order
			a, _ := strconv.Atoi(events[i-1].meta("resourceVersion"))
			b, _ := strconv.Atoi(events[i].meta("resourceVersion"))
			if b <= a {
				t.Fatalf("event %d at rv %d after rv %d", i, b, a)
			}
		}
	}
}

// TestCreatedAndListedObjectsAreEqual: what client-go decodes from a
// create (protobuf) and from a list (JSON) is the same object, as the
// e2e suite's API-streaming spec checks: a built-in kind's list items
// carry no kind of their own, as in kube-apiserver.
func TestCreatedAndListedObjectsAreEqual(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	ctx := context.Background()
	proto := clientset(t, lab, runtime.ContentTypeProtobuf)
	jsonClient := clientset(t, lab, runtime.ContentTypeJSON)
	var created []corev1.Secret
	for _, name := range []string{"s1", "s2", "s3"} {
		s, err := proto.CoreV1().Secrets("internals-demo").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"listed": "yes"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, *s)
	}
	for _, c := range []kubernetes.Interface{jsonClient, proto} {
		list, err := c.CoreV1().Secrets("internals-demo").List(ctx, metav1.ListOptions{LabelSelector: "listed=yes"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(created, list.Items) {
			t.Fatalf("created and listed differ:\n%+v\n%+v", created, list.Items)
		}
	}
}
