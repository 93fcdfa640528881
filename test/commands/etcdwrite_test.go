package commands_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/web"
)

// The lesson says that a write made straight to etcd reaches every
// watcher, having passed no authentication, authorization, admission or
// validation: the watch cache follows etcd, not the API. Here a label the
// API refuses, written into the Pod's key, arrives on a client's watch.
func TestADirectEtcdWriteReachesEveryWatcher(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := l.Clientset(t).CoreV1().Pods(web.DemoNamespace)
	const label, value = "written-past-the-api", "not a valid label value!"

	// The API validates the label and refuses it.
	_, err := pods.Patch(ctx, "ssa-demo", types.MergePatchType, []byte(`{"metadata":{"labels":{"`+label+`":"`+value+`"}}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("the API took a label value it must refuse: %v", err)
	}

	pod, err := pods.Get(ctx, "ssa-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: pod.ResourceVersion, FieldSelector: "metadata.name=ssa-demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The same label, written into etcd directly.
	key := "/registry/pods/" + web.DemoNamespace + "/ssa-demo"
	etcd := l.EtcdClient()
	resp, err := etcd.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v %v", key, resp, err)
	}
	codec := protobuf.NewSerializer(kubeapi.Scheme, kubeapi.Scheme)
	obj, _, err := codec.Decode(resp.Kvs[0].Value, nil, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	stored := obj.(*corev1.Pod)
	stored.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	stored.Labels[label] = value
	var buf bytes.Buffer
	if err := codec.Encode(stored, &buf); err != nil {
		t.Fatal(err)
	}
	put, err := etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, buf.String())).Commit()
	if err != nil || !put.Succeeded {
		t.Fatalf("etcd put %s: %v %v", key, put, err)
	}

	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended before the write reached it")
			}
			if p, isPod := ev.Object.(*corev1.Pod); ev.Type == watch.Modified && isPod && p.Labels[label] == value {
				return
			}
		case <-ctx.Done():
			t.Fatal("the direct etcd write never reached the watch")
		}
	}
}
