// Package kubelabtest starts a whole kubelab server for tests: embedded
// etcd in a temp dir, free loopback ports, stopped by t.Cleanup, so that
// tests can drive it with the real kubectl, etcdctl and client-go.
package kubelabtest

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	"github.com/kubelab/kubelab/controller/rootca"
	"github.com/kubelab/kubelab/internal/freeport"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// Lab is a running kubelab.
type Lab struct {
	*server.Server
	// EtcdURL is where etcdctl reaches the embedded etcd in local mode; in
	// classroom mode that port serves only TLS with client certificates:
	// give etcdctl EtcdctlFlags.
	EtcdURL string
}

// starting holds a place for each server starting, two at most: a start
// is a burst of CPU (the OpenAPI documents, the seeded state, the
// controllers' first pass), and with every parallel test of a package
// starting at once on two cores, an etcd request of a start timed out.
// Once started, tests wait side by side.
var starting = make(chan struct{}, 2)

// Start runs kubelab until the test ends. Options tune its Config.
func Start(t testing.TB, options ...func(*server.Config)) *Lab {
	t.Helper()
	starting <- struct{}{}
	defer func() { <-starting }()
	var (
		s        *server.Server
		etcdAddr string
	)
	// The embedded etcd is told its client port before it binds it, and
	// another test can take the port in between: then start again on
	// another.
	err := freeport.Retry(func() error {
		etcdAddr = storagetest.FreeAddr(t)
		cfg := server.DefaultConfig()
		cfg.Listen = "127.0.0.1:0"
		cfg.DataDir = t.TempDir()
		cfg.EtcdListenClient = etcdAddr
		// A class's HTTPS port too: the default, 6443, is a real API
		// server's, and tests run side by side.
		cfg.SecureListen = "127.0.0.1:0"
		cfg.CompactionInterval = 0
		// A test's etcd dies with the test: fsync would only make every
		// write wait on the disk that all the tests share.
		cfg.EtcdUnsafeNoFsync = true
		// Off unless a test asks: then a test's watch sees its own writes
		// only, not the simulated kubelet's.
		cfg.SimulatedNode = false
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		for _, o := range options {
			o(&cfg)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var err error
		s, err = server.New(ctx, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("start kubelab: %v", err)
	}
	s.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("stop kubelab: %v", err)
		}
	})
	lab := &Lab{Server: s, EtcdURL: "http://" + etcdAddr}
	lab.WaitForControllers(t)
	return lab
}

// WaitForControllers returns once the controllers have done what the
// seeded state asks of them (a default service account and the root CA's
// ConfigMap in every namespace, each APIService's Available condition,
// each ResourceQuota's count of what is stored), so
// that tests start from a quiet etcd whose revision moves only with their
// own requests. Start calls it; call it again after creating a namespace
// (a student joining, say) before measuring that a request wrote nothing.
func (l *Lab) WaitForControllers(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	namespaces, _ := l.API().Store(corev1.SchemeGroupVersion.WithResource("namespaces"))
	accounts, _ := l.API().Store(corev1.SchemeGroupVersion.WithResource("serviceaccounts"))
	configMaps, _ := l.API().Store(corev1.SchemeGroupVersion.WithResource("configmaps"))
	published := func(namespaces int) (bool, error) {
		cms, err := configMaps.List(ctx, storage.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, cm := range cms.Items {
			if cm.(*corev1.ConfigMap).Name == rootca.ConfigMapName {
				n++
			}
		}
		return n >= namespaces, nil
	}
	// The aggregator writes each APIService's Available condition once it
	// has checked its backend.
	apiServices, _ := l.API().Store(apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"))
	available := func() (bool, error) {
		list, err := apiServices.List(ctx, storage.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, obj := range list.Items {
			if !apiregistrationhelper.IsAPIServiceConditionTrue(obj.(*apiregistrationv1.APIService), apiregistrationv1.Available) {
				return false, nil
			}
		}
		return true, nil
	}
	// The quota controller corrects each namespace's usage after a write.
	quotasSettled := func(nss *storage.ListResult) (bool, error) {
		for _, ns := range nss.Items {
			ok, err := l.QuotaSettled(ctx, ns.(*corev1.Namespace).Name)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		nss, err1 := namespaces.List(ctx, storage.ListOptions{})
		sas, err2 := accounts.List(ctx, storage.ListOptions{})
		if err1 == nil && err2 == nil && len(sas.Items) >= len(nss.Items) {
			ok1, err1 := published(len(nss.Items))
			ok2, err2 := available()
			ok3, err3 := quotasSettled(nss)
			if err1 == nil && err2 == nil && err3 == nil && ok1 && ok2 && ok3 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("controllers did not settle: %v %v", err1, err2)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KeysWrittenSince lists the etcd keys written (put or deleted) after
// revision rev, in order: what a test shows when a request that should
// have written nothing moved the revision.
func (l *Lab) KeysWrittenSince(t testing.TB, rev int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	head, err := l.EtcdClient().Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if head.Header.Revision <= rev {
		return keys
	}
	for resp := range l.EtcdClient().Watch(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			keys = append(keys, string(ev.Kv.Key))
			if ev.Kv.ModRevision >= head.Header.Revision {
				return keys
			}
		}
	}
	t.Fatalf("the etcd watch from revision %d ended early: %v", rev+1, ctx.Err())
	return nil
}

// Clientset is a client-go clientset for the admin kubeconfig, without
// client-side rate limiting.
func (l *Lab) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", l.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
}

// RunParallel runs m's tests with n parallel tests at a time, unless the
// run was given -parallel (or -test.parallel), and returns m.Run's code:
// for a TestMain whose package's parallel tests each start a server and
// spend most of their time waiting (on watches that end by timeoutSeconds,
// on processes), so that more of them wait side by side than the
// machine has cores, which -parallel defaults to.
func RunParallel(m *testing.M, n int) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
