package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/freeport"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// child is the kubelab server process under test.
type child struct {
	cmd     *exec.Cmd
	url     string
	etcdURL string
	dataDir string
	// kubeconfig is the admin kubeconfig the load connects with.
	kubeconfig string
	// pids are the server's processes, whose memory and CPU are
	// measured together: kubelab's one, or the reference's three.
	pids []int
}

// startChild runs the kubelab binary (built from ./cmd/kubelab when none
// is given) on a fresh data dir, so its memory is measured as deployed.
// args are more flags for it.
func startChild(ctx context.Context, bin string, args ...string) (*child, error) {
	return startPinnedChild(ctx, bin, nil, args...)
}

// startPinnedChild is startChild with pin, if not nil, applied: the child
// starts on the server's CPUs, and this process moves to the client's.
func startPinnedChild(ctx context.Context, bin string, pin *pinning, args ...string) (*child, error) {
	dir, err := os.MkdirTemp("", "kubelab-load-")
	if err != nil {
		return nil, err
	}
	if bin == "" {
		bin = filepath.Join(dir, "kubelab")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kubelab")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building ./cmd/kubelab (run from the repository root): %w", err)
		}
	}
	listen, etcd := freeAddr(), freeAddr()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--data-dir", filepath.Join(dir, "data"), "--listen", listen,
		"--etcd-listen-client", etcd, "--compaction-interval", "0", "--log-level", "error"}, args...)...)
	cmd.Stderr = os.Stderr
	if pin != nil {
		// The child inherits the affinity of the thread that forks it:
		// every thread of this process is on the server's CPUs meanwhile.
		if err := pinSelf(pin.server); err != nil {
			return nil, err
		}
	}
	err = cmd.Start()
	if pin != nil {
		// Twice: a thread started during the first pass inherits the
		// server's CPUs from the thread that started it.
		for range 2 {
			if err := pinSelf(pin.client); err != nil {
				return nil, err
			}
		}
		runtime.GOMAXPROCS(pin.client.Count())
	}
	if err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, url: "http://" + listen, etcdURL: "http://" + etcd, dataDir: dir,
		kubeconfig: filepath.Join(dir, "data", "kubeconfig"), pids: []int{cmd.Process.Pid}}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(c.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, errors.New("kubelab did not become ready within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *child) stop() {
	if c.cmd == nil {
		return // the reference: cluster.sh stops it
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.cmd.Wait()
	os.RemoveAll(c.dataDir)
}

// cpuSeconds is the CPU time the process pid has used, from /proc.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// cpuSeconds is the CPU time the server's processes have used.
func (c *child) cpuSeconds() float64 {
	total := 0.0
	for _, pid := range c.pids {
		total += cpuSeconds(pid)
	}
	return total
}

// rssMB is the server's resident memory, its processes' together, from /proc.
func (c *child) rssMB() float64 {
	total := 0.0
	for _, pid := range c.pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return -1
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				total += kb / 1024
			}
		}
	}
	return total
}

func freeAddr() string {
	addr, err := freeport.Loopback()
	if err != nil {
		panic(err)
	}
	return addr
}

// waitForDefaultServiceAccount waits, at most a minute, for the service
// account pods of ns run as.
func waitForDefaultServiceAccount(ctx context.Context, client kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s has no default service account: %w", ns, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func run(ctx context.Context, cfg loadConfig, out io.Writer) error {
	// As the reference was measured: an API server and etcd, with no
	// scheduler or kubelet. With the simulated node, every pod created
	// would be bound and reported Running, two more writes and two more
	// events per pod for every watcher.
	var c *child
	var err error
	if cfg.Reference != "" {
		c, err = referenceServer(cfg.Reference)
	} else {
		c, err = startChild(ctx, cfg.Kubelab, "--simulated-node=false", "--apiserver="+cfg.APIServer)
	}
	if err != nil {
		return err
	}
	defer c.stop()
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = -1, 0 // no client-side rate limit: measure the server
	client := kubernetes.NewForConfigOrDie(restCfg)
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer etcd.Close()
	namespaces := []string{"load"}
	for _, n := range cfg.Watchers {
		namespaces = append(namespaces, fmt.Sprintf("watch-%d", n))
	}
	for _, ns := range namespaces {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// Pods need their namespace's default service account, which a
	// controller makes once the namespace exists.
	for _, ns := range namespaces {
		if err := waitForDefaultServiceAccount(ctx, client, ns); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "## kubelab-load, %s\n\n", time.Now().UTC().Format(time.DateTime))
	fmt.Fprintf(out, "Server idle RSS: %.0f MB\n\n", c.rssMB())
	value, err := storage.NewProtobufCodec(kubeapi.Scheme, corev1.SchemeGroupVersion).Encode(loadPod("p-000000000"))
	if err != nil {
		return err
	}
	raw := measureCreates(cfg.Writers, cfg.Creates, func(i int64) error {
		key := fmt.Sprintf("/registry/raw/load/p-%09d", i)
		_, err := etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, string(value))).Commit()
		return err
	})
	pods := client.CoreV1().Pods("load")
	viaAPI := measureCreates(cfg.Writers, cfg.Creates, func(i int64) error {
		_, err := pods.Create(ctx, loadPod(fmt.Sprintf("p-%09d", i)), metav1.CreateOptions{})
		return err
	})
	if raw.err != nil || viaAPI.err != nil {
		return errors.Join(raw.err, viaAPI.err)
	}
	fmt.Fprintf(out, "| creates, %d writers, %d each run | creates/s |\n|---|---|\n", cfg.Writers, cfg.Creates)
	fmt.Fprintf(out, "| raw etcd txn (%d-byte value) | %.0f |\n", len(value), raw.perSecond)
	fmt.Fprintf(out, "| kubelab via client-go (its defaults) | %.0f (%.0f%% of raw) |\n\n", viaAPI.perSecond, 100*viaAPI.perSecond/raw.perSecond)

	fmt.Fprintf(out, "| watchers | writes | p50 ms | p99 ms | max ms | server RSS MB | server CPU s | client CPU s |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range cfg.Watchers {
		serverCPU, clientCPU := c.cpuSeconds(), cpuSeconds(os.Getpid())
		if cfg.ProfileDir != "" {
			go saveProfile(c.url, filepath.Join(cfg.ProfileDir, fmt.Sprintf("server-%d-watchers.pprof", n)), cfg.Events/cfg.Rate)
		}
		res, err := measureWatch(ctx, restCfg, client, c, n, cfg.Events, cfg.Rate)
		if err != nil {
			return err
		}
		serverCPU, clientCPU = c.cpuSeconds()-serverCPU, cpuSeconds(os.Getpid())-clientCPU
		fmt.Fprintf(out, "| %d | %d at %d/s | %.1f | %.1f | %.1f | %.0f | %.1f | %.1f |\n", n, cfg.Events, cfg.Rate, res.p50, res.p99, res.max, res.rss, serverCPU, clientCPU)
	}
	return nil
}

func loadPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "load"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
}

type createResult struct {
	perSecond float64
	err       error
}

func measureCreates(writers, total int, create func(int64) error) createResult {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(total) {
					return
				}
				if err := create(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	res := createResult{perSecond: float64(total) / time.Since(start).Seconds()}
	if err, ok := firstErr.Load().(error); ok {
		res.err = err
	}
	return res
}

type watchResult struct{ p50, p99, max, rss float64 }

// measureWatch opens n client-go watches, writes at a steady rate, and
// records for every watcher and write how long after the ack the event came.
func measureWatch(ctx context.Context, restCfg *rest.Config, client *kubernetes.Clientset, c *child, n, events, rate int) (watchResult, error) {
	// A namespace of its own, so that the watches start without
	// synthetic ADDED events for an earlier round's pods.
	ns := fmt.Sprintf("watch-%d", n)
	var acked sync.Map // pod name → ack time
	type delivery struct {
		name string
		at   time.Time
	}
	deliveries := make(chan delivery, n*events)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ready sync.WaitGroup
	var watchers []watch.Interface
	if rawWatchers {
		if err := openRawWatchers(wctx, restCfg, ns, n, func(name string) { deliveries <- delivery{name, time.Now()} }); err != nil {
			return watchResult{}, err
		}
	}
	for range n * boolInt(!rawWatchers) {
		w, err := client.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: "", SendInitialEvents: nil})
		if err != nil {
			return watchResult{}, err
		}
		watchers = append(watchers, w)
		ready.Add(1)
		go func() {
			defer ready.Done()
			for ev := range w.ResultChan() {
				if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
					deliveries <- delivery{pod.Name, time.Now()}
				}
			}
		}()
	}
	time.Sleep(time.Second) // every watch open and idle
	var rss float64
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	prefix := fmt.Sprintf("w%d-", n)
	for i := range events {
		<-tick.C
		name := fmt.Sprintf("%s%06d", prefix, i)
		if _, err := client.CoreV1().Pods(ns).Create(ctx, loadPod(name), metav1.CreateOptions{}); err != nil {
			return watchResult{}, err
		}
		acked.Store(name, time.Now())

		if i == events/2 {
			rss = c.rssMB()
		}
	}
	var lat []float64
	timeout := time.After(30 * time.Second)
	for len(lat) < n*events {
		select {
		case d := <-deliveries:
			if !strings.HasPrefix(d.name, prefix) {
				continue
			}
			at, _ := acked.Load(d.name)
			var ms float64
			if t, ok := at.(time.Time); ok {
				ms = max(0, float64(d.at.Sub(t).Microseconds())/1000)
			}
			lat = append(lat, ms)
		case <-timeout:
			return watchResult{}, fmt.Errorf("%d watchers: only %d of %d deliveries within 30s", n, len(lat), n*events)
		}
	}
	for _, w := range watchers {
		w.Stop()
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))] }
	return watchResult{p50: q(0.5), p99: q(0.99), max: q(1), rss: rss}, nil
}

// rawWatchers switches the watchers from client-go to plain HTTP streams,
// to tell the server's delivery apart from client-go's decoding.
var rawWatchers = os.Getenv("KUBELAB_LOAD_RAW_WATCHERS") != ""

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func openRawWatchers(ctx context.Context, restCfg *rest.Config, ns string, n int, got func(name string)) error {
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	for range n {
		req, _ := http.NewRequestWithContext(ctx, "GET", restCfg.Host+"/api/v1/namespaces/"+ns+"/pods?watch=1", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		go func() {
			defer resp.Body.Close()
			dec := json.NewDecoder(resp.Body)
			for {
				var ev struct {
					Type   string `json:"type"`
					Object struct {
						Metadata struct{ Name string } `json:"metadata"`
					} `json:"object"`
				}
				if dec.Decode(&ev) != nil {
					return
				}
				if ev.Type == "ADDED" {
					got(ev.Object.Metadata.Name)
				}
			}
		}()
	}
	return nil
}

// saveProfile records the server's CPU for seconds from its /debug/pprof.
func saveProfile(serverURL, path string, seconds int) {
	resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", serverURL, max(seconds, 1)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer f.Close()
	io.Copy(f, resp.Body)
}
