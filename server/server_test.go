package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// startServer runs a server on a free port against a real etcd member of
// its own, reached as an external cluster so that the test can stop it.
func startServer(t *testing.T, mutate ...func(*server.Config)) (s *server.Server, stopEtcd func()) {
	t.Helper()
	m, err := embedetcd.Start(embedetcd.Config{
		DataDir:       t.TempDir(),
		ClientURL:     "http://" + storagetest.FreeAddr(t),
		PeerURL:       "http://" + storagetest.FreeAddr(t),
		UnsafeNoFsync: true,
		Logger:        zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	stopEtcd = sync.OnceFunc(m.Stop)
	t.Cleanup(stopEtcd)
	cfg := testConfig(t)
	cfg.EtcdListenClient = ""
	cfg.EtcdEndpoints = []string{m.ClientURL()}
	for _, f := range mutate {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err = server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A minute: wide of a loaded machine's stop.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, stopEtcd
}

func testConfig(t *testing.T) server.Config {
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.EtcdListenClient = storagetest.FreeAddr(t)
	cfg.EtcdUnsafeNoFsync = true
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return getWithToken(t, url, "")
}

// getWithToken GETs url, with token as the bearer token unless it is "".
func getWithToken(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// postStartHooks are kube-apiserver's post-start hooks that the Kubernetes
// e2e suite's "health handlers should contain necessary checks" requires,
// plus storage-readiness, in the order kubelab lists them.
var postStartHooks = []string{
	"start-apiserver-admission-initializer",
	"generic-apiserver-start-informers",
	"start-apiextensions-informers",
	"start-apiextensions-controllers",
	"crd-informer-synced",
	"bootstrap-controller",
	"start-system-namespaces-controller",
	"start-service-ip-repair-controllers",
	"scheduling/bootstrap-system-priority-classes",
	"start-cluster-authentication-info-controller",
	"start-kube-aggregator-informers",
	"apiservice-registration-controller",
	"apiservice-status-local-available-controller",
	"apiservice-status-remote-available-controller",
	"kube-apiserver-autoregistration",
	"apiservice-openapi-controller",
	"storage-readiness",
}

// verboseHealth is what ?verbose lists for endpoint when every check but
// those in failing passes; etcdExcluded marks etcd excluded.
func verboseHealth(endpoint string, etcdExcluded bool, failing ...string) string {
	checks := []string{"ping", "log", "etcd"}
	if endpoint == "readyz" {
		checks = append(checks, "informer-sync")
	}
	for _, h := range postStartHooks {
		checks = append(checks, "poststarthook/"+h)
	}
	checks = append(checks, "autoregister-completion")
	if endpoint == "readyz" {
		checks = append(checks, "shutdown")
	}
	var b strings.Builder
	for _, c := range checks {
		switch {
		case slices.Contains(failing, c):
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c)
		case c == "etcd" && etcdExcluded:
			b.WriteString("[+]etcd excluded: ok\n")
		default:
			fmt.Fprintf(&b, "[+]%s ok\n", c)
		}
	}
	if len(failing) > 0 {
		return b.String() + endpoint + " check failed\n"
	}
	return b.String() + endpoint + " check passed\n"
}

// getAs GETs path as the admin of the server's kubeconfig.
func getAs(t *testing.T, s *server.Server, path string) (int, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	return getWithToken(t, s.URL()+path, cfg.BearerToken)
}

// waitReady waits for /readyz: the post-start hooks finish just after
// the server starts serving.
func waitReady(t *testing.T, s *server.Server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := get(t, s.URL()+"/readyz?verbose")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never passed: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t)
	s.Start()
	waitReady(t, s)
	for _, tc := range []struct {
		path, body string
	}{
		{"/healthz", "ok"},
		{"/livez", "ok"},
		{"/readyz", "ok"},
		{"/healthz?verbose", verboseHealth("healthz", false)},
		{"/livez?verbose", verboseHealth("livez", false)},
		{"/readyz?verbose", verboseHealth("readyz", false)},
		{"/readyz?verbose&exclude=etcd", verboseHealth("readyz", true)},
		{"/readyz/etcd", "ok"},
		{"/readyz/ping", "ok"},
		{"/readyz/log", "ok"},
		{"/readyz/informer-sync", "ok"},
		{"/readyz/shutdown", "ok"},
		{"/readyz/autoregister-completion", "ok"},
		{"/readyz/poststarthook/scheduling/bootstrap-system-priority-classes", "ok"},
		{"/livez/ping", "ok"},
		{"/livez/etcd", "ok"},
		{"/livez/poststarthook/kube-apiserver-autoregistration", "ok"},
		{"/healthz/etcd", "ok"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, s.URL()+tc.path)
			if code != http.StatusOK || body != tc.body {
				t.Fatalf("GET %s = %d %q, want 200 %q", tc.path, code, body, tc.body)
			}
		})
	}
	// As kube-apiserver 1.37 answers: unknown exclusions quoted and
	// sorted, and every method served (RBAC decides who may POST).
	t.Run("unknown exclusions", func(t *testing.T) {
		want := strings.TrimSuffix(verboseHealth("readyz", false), "readyz check passed\n") +
			`warn: some health checks cannot be excluded: no matches for "bar","foo"` + "\nreadyz check passed\n"
		if code, body := get(t, s.URL()+"/readyz?verbose&exclude=foo&exclude=bar"); code != http.StatusOK || body != want {
			t.Fatalf("GET /readyz?verbose&exclude=foo&exclude=bar = %d %q, want 200 %q", code, body, want)
		}
	})
	t.Run("POST", func(t *testing.T) {
		resp, err := http.Post(s.URL()+"/readyz", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("POST /readyz = %d %q (%s), want 200 ok, text/plain; charset=utf-8", resp.StatusCode, body, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("unknown check", func(t *testing.T) {
		for _, path := range []string{"/readyz/nope", "/livez/shutdown", "/livez/informer-sync"} {
			if code, _ := get(t, s.URL()+path); code != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 404", path, code)
			}
		}
	})
}

// TestPostStartHooksDidTheirWork: each hook reports done because its work
// is there to see: the system namespaces, the kubernetes Service, kube's
// two system PriorityClasses, the authentication ConfigMap, and a Local,
// Available APIService for each built-in group version.
func TestPostStartHooksDidTheirWork(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t)
	s.Start()
	waitReady(t, s)
	for _, path := range []string{
		"/api/v1/namespaces/default", "/api/v1/namespaces/kube-system", "/api/v1/namespaces/kube-public", "/api/v1/namespaces/kube-node-lease",
		"/api/v1/namespaces/default/services/kubernetes",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-cluster-critical",
		"/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
		"/apis/apiregistration.k8s.io/v1/apiservices/v1.",
		"/apis/apiregistration.k8s.io/v1/apiservices/v1.apps",
		"/apis/apiregistration.k8s.io/v1/apiservices/v2.autoscaling",
	} {
		code, body := getAs(t, s, path)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
	_, body := getAs(t, s, "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps")
	for _, want := range []string{`"kube-aggregator.kubernetes.io/automanaged":"onstart"`, `"groupPriorityMinimum":17800`, `"reason":"Local"`, `"status":"True"`} {
		if !strings.Contains(body, want) {
			t.Errorf("v1.apps APIService lacks %s: %s", want, body)
		}
	}
	_, body = getAs(t, s, "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical")
	if !strings.Contains(body, `"value":2000001000`) {
		t.Errorf("system-node-critical: %s", body)
	}
}

func TestReadyzFailsWhenEtcdStops(t *testing.T) {
	t.Parallel()
	s, stopEtcd := startServer(t)
	s.Start()
	waitReady(t, s)
	stopEtcd()
	code, body := get(t, s.URL()+"/readyz")
	want := verboseHealth("readyz", false, "etcd")
	if code != http.StatusInternalServerError || body != want {
		t.Fatalf("GET /readyz = %d %q, want 500 %q", code, body, want)
	}
	if code, body := get(t, s.URL()+"/livez?verbose"); code != http.StatusInternalServerError || !strings.Contains(body, "[-]etcd failed") {
		t.Errorf("GET /livez?verbose = %d %q, want 500 listing [-]etcd failed", code, body)
	}
	if code, body := get(t, s.URL()+"/readyz/etcd"); code != http.StatusInternalServerError || !strings.HasPrefix(body, "internal server error: ") {
		t.Errorf("GET /readyz/etcd = %d %q, want 500 with the reason", code, body)
	}
	if code, body := get(t, s.URL()+"/readyz?exclude=etcd"); code != http.StatusOK {
		t.Errorf("GET /readyz?exclude=etcd = %d %q, want 200", code, body)
	}
}

func TestUnknownPathIsNotFoundStatus(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t)
	s.Start()
	resp, err := http.Get(s.URL() + "/api/v1/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`
	if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(body)) != want {
		t.Fatalf("got %d %s\nwant 404 %s", resp.StatusCode, body, want)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
}

// The storage layer's compactor is the one Server.SetCompactor expects.
var _ server.Compactor = (*etcd3.Compactor)(nil)

// fakeCompactor records how it is run and checks, when told to stop, that
// etcd is still there.
type fakeCompactor struct {
	client   *clientv3.Client
	interval time.Duration
	done     chan error
}

func (c *fakeCompactor) Run(ctx context.Context, interval time.Duration) {
	c.interval = interval
	<-ctx.Done()
	gctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.client.Get(gctx, "compact-check")
	c.done <- err
}

func TestShutdownOrder(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t, func(c *server.Config) { c.CompactionInterval = 42 * time.Second })
	compactor := &fakeCompactor{client: s.EtcdClient(), done: make(chan error, 1)}
	s.SetCompactor(compactor)
	s.Start()
	var order []string
	var readyzDuringHook string
	s.OnShutdown(func(context.Context) {
		order = append(order, "first")
		_, readyzDuringHook = get(t, s.URL()+"/readyz?verbose")
	})
	s.OnShutdown(func(context.Context) { order = append(order, "second") })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "second,first" {
		t.Errorf("hooks ran %s, want second,first", got)
	}
	if !strings.Contains(readyzDuringHook, "[-]shutdown failed: reason withheld") {
		t.Errorf("/readyz during shutdown = %q, want [-]shutdown failed", readyzDuringHook)
	}
	if compactor.interval != 42*time.Second {
		t.Errorf("compactor got interval %s, want 42s", compactor.interval)
	}
	select {
	case err := <-compactor.done:
		if err != nil {
			t.Errorf("etcd was gone before the compactor stopped: %v", err)
		}
	default:
		t.Error("Shutdown returned before the compactor did")
	}
	if _, err := http.Get(s.URL() + "/readyz"); err == nil {
		t.Error("server still serving after Shutdown")
	}
}

// runServer runs server.Run in the background and waits until it is ready.
func runServer(t *testing.T, cfg server.Config) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("Run returned before it was ready: %v", err)
		default:
		}
		resp, err := http.Get("http://" + cfg.Listen + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("not ready after a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30s of its context being cancelled")
			return nil
		}
	}
}

func TestRunStopsCleanly(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Listen = storagetest.FreeAddr(t)
	stop := runServer(t, cfg)

	// The embedded member is reachable the way etcdctl reaches it.
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{cfg.EtcdListenClient}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Put(ctx, "/registry/x", "y"); err != nil {
		t.Fatalf("put through etcd's client listener: %v", err)
	}

	if err := stop(); err != nil {
		t.Fatalf("Run returned %v after its context was cancelled, want nil", err)
	}
	for _, addr := range []string{cfg.Listen, cfg.EtcdListenClient} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s still in use after Run returned: %v", addr, err)
			continue
		}
		l.Close()
	}
	gctx, gcancel := context.WithTimeout(context.Background(), time.Second)
	defer gcancel()
	if _, err := client.Get(gctx, "/registry/x"); err == nil {
		t.Error("etcd still answering after Run returned")
	}
}

func TestRunFailsOnBadConfig(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Listen = "nope"
	if err := server.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("Run = %v, want an error about --listen", err)
	}
}

func TestRunFailsWhenPortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := testConfig(t)
	cfg.Listen = l.Addr().String()
	err = server.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("Run = %v, want an error about --listen", err)
	}
	// The etcd member it started must be gone again.
	if l2, err := net.Listen("tcp", cfg.EtcdListenClient); err != nil {
		t.Errorf("etcd client port still in use after a failed start: %v", err)
	} else {
		l2.Close()
	}
}

// decodeStatus reads a Status response.
func decodeStatus(t *testing.T, resp *http.Response) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decoding Status: %v", err)
	}
	return st
}

func TestRunKeepsAdminTokenAcrossRestarts(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Listen = storagetest.FreeAddr(t)
	type kubeconfig struct {
		Clusters []struct {
			Cluster struct{ Server string }
		}
		Users []struct {
			Name string
			User struct{ Token string }
		}
		CurrentContext string `json:"current-context"`
	}
	read := func() kubeconfig {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(cfg.DataDir, "kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		var kc kubeconfig
		if err := yaml.Unmarshal(data, &kc); err != nil {
			t.Fatalf("kubeconfig is not YAML: %v", err)
		}
		if len(kc.Clusters) != 1 || len(kc.Users) != 1 || kc.Users[0].User.Token == "" || kc.CurrentContext != "kubelab" {
			t.Fatalf("kubeconfig = %+v, want one cluster, one user with a token, current context kubelab", kc)
		}
		return kc
	}

	stop := runServer(t, cfg)
	first := read()
	if code, _ := get(t, first.Clusters[0].Cluster.Server+"/readyz"); code != http.StatusOK {
		t.Fatalf("the kubeconfig's server answers /readyz with %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	stop = runServer(t, cfg)
	second := read()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if second.Users[0].User.Token != first.Users[0].User.Token {
		t.Error("the admin token changed across restarts")
	}
	for _, name := range []string{"kubeconfig", "admin-token.sha256"} {
		fi, err := os.Stat(filepath.Join(cfg.DataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
}

func TestRunStopsWhileWaitingForEtcd(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.EtcdListenClient = ""
	cfg.EtcdEndpoints = []string{storagetest.FreeAddr(t)} // nothing listens there
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := server.Run(ctx, cfg); err != nil {
		t.Fatalf("Run = %v, want nil when stopped before etcd answered", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run took %s to notice its context was done", d)
	}
}

// TestPeriodicCompaction: with --compaction-interval, etcd's history before
// the revision seen one interval earlier is really gone.
func TestPeriodicCompaction(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t, func(c *server.Config) { c.CompactionInterval = 300 * time.Millisecond })
	s.Start()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := s.EtcdClient().Put(ctx, "/registry/configmaps/ns/a", "1")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := s.EtcdClient().Put(ctx, "/registry/configmaps/ns/a", "2"); err != nil {
			t.Fatal(err)
		}
		_, err := s.EtcdClient().Get(ctx, "/registry/configmaps/ns/a", clientv3.WithRev(first.Header.Revision))
		if errors.Is(err, rpctypes.ErrCompacted) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("revision never compacted")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
