package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestMain removes the kubelab binary TestBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	kubelabproc.RemoveBinary()
	os.Exit(code)
}

// withoutKubelabEnv clears KUBELAB_* variables of the environment the tests
// run in, which ff reads and would mistake for the test's own.
func withoutKubelabEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KUBELAB_") {
			t.Setenv(k, "")
		}
	}
}

func TestParseConfig(t *testing.T) {
	withoutKubelabEnv(t)
	t.Run("defaults", func(t *testing.T) {
		cfg, err := parseConfig(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.StartKubeCore == nil {
			t.Fatal("the binary gives kubelab no kube core")
		}
		// Funcs do not compare: the rest must be the defaults, but for
		// the terminal's processes, which only the binary can start.
		cfg.StartKubeCore = nil
		want := server.DefaultConfig()
		want.TerminalProcesses = true
		if !reflect.DeepEqual(cfg, want) {
			t.Fatalf("got %+v, want the defaults %+v", cfg, want)
		}
	})
	// Skipping fsync is for tests' throwaway etcd only: an instructor's
	// kubelab always syncs, whatever it is given.
	t.Run("etcd always syncs", func(t *testing.T) {
		t.Setenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "true")
		t.Setenv("KUBELAB_UNSAFE_NO_FSYNC", "true")
		cfg, err := parseConfig(nil, io.Discard)
		if err != nil || cfg.EtcdUnsafeNoFsync {
			t.Fatalf("no fsync %v (%v); want fsync, always", cfg.EtcdUnsafeNoFsync, err)
		}
		for _, flag := range []string{"--etcd-unsafe-no-fsync", "--unsafe-no-fsync"} {
			if cfg, err := parseConfig([]string{flag}, io.Discard); err == nil {
				t.Fatalf("%s accepted (no fsync %v)", flag, cfg.EtcdUnsafeNoFsync)
			}
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("KUBELAB_DATA_DIR", "/srv/lab")
		t.Setenv("KUBELAB_COMPACTION_INTERVAL", "0")
		t.Setenv("KUBELAB_LISTEN", "127.0.0.1:9999")
		cfg, err := parseConfig([]string{"--listen", "127.0.0.1:7000"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.DataDir != "/srv/lab" || cfg.CompactionInterval != 0 || cfg.Listen != "127.0.0.1:7000" {
			t.Fatalf("got data dir %q, compaction %s, listen %q; want the environment's, and the flag over the environment", cfg.DataDir, cfg.CompactionInterval, cfg.Listen)
		}
	})
	t.Run("external etcd replaces the embedded one", func(t *testing.T) {
		t.Setenv("KUBELAB_ETCD_ENDPOINTS", "10.0.0.1:2379, 10.0.0.2:2379")
		cfg, err := parseConfig(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.EtcdListenClient != "" || !reflect.DeepEqual(cfg.EtcdEndpoints, []string{"10.0.0.1:2379", "10.0.0.2:2379"}) {
			t.Fatalf("got listen client %q, endpoints %q", cfg.EtcdListenClient, cfg.EtcdEndpoints)
		}
	})
	t.Run("a class takes a few students from one address", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want int
		}{
			{[]string{"--classroom"}, 3},
			{[]string{"--classroom", "--max-joins-per-address=0"}, 0},
		} {
			if cfg, err := parseConfig(tc.args, io.Discard); err != nil || cfg.MaxJoinsPerAddress != tc.want {
				t.Errorf("%q: %d joins per address (%v), want %d", tc.args, cfg.MaxJoinsPerAddress, err, tc.want)
			}
		}
		if _, err := parseConfig([]string{"--classroom", "--max-joins-per-address=-1"}, io.Discard); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("--max-joins-per-address=-1: %v, want refused", err)
		}
	})
	t.Run("a class's quizzes show answers once closed", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{nil, "after-last-attempt"},
			{[]string{"--classroom"}, "after-close"},
			{[]string{"--classroom", "--quiz-reveal=after-submit"}, "after-submit"},
		} {
			if cfg, err := parseConfig(tc.args, io.Discard); err != nil || cfg.QuizReveal != tc.want {
				t.Errorf("%q: reveal %q (%v), want %q", tc.args, cfg.QuizReveal, err, tc.want)
			}
		}
		cfg, err := parseConfig([]string{"--quiz-closes-at=2027-01-15T17:00:00+07:00"}, io.Discard)
		if err != nil || !cfg.QuizClosesAt.Equal(time.Date(2027, 1, 15, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("--quiz-closes-at: %s (%v)", cfg.QuizClosesAt, err)
		}
		if _, err := parseConfig([]string{"--quiz-closes-at=tomorrow"}, io.Discard); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("--quiz-closes-at=tomorrow: %v, want an error naming the format", err)
		}
	})
	t.Run("the class's hosts", func(t *testing.T) {
		t.Setenv("KUBELAB_TLS_SAN", "lab.example.org, 203.0.113.7")
		t.Setenv("KUBELAB_PROXY_PROTOCOL_FROM", "0.0.0.0/0, ::/0")
		cfg, err := parseConfig([]string{"--classroom", "--ca-validity=2160h"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfg.TLSSANs, []string{"lab.example.org", "203.0.113.7"}) || cfg.CAValidity != 90*24*time.Hour {
			t.Fatalf("got hosts %q, CA validity %s", cfg.TLSSANs, cfg.CAValidity)
		}
		if !reflect.DeepEqual(cfg.ProxyProtocolFrom, []string{"0.0.0.0/0", "::/0"}) {
			t.Fatalf("got proxies %q", cfg.ProxyProtocolFrom)
		}
	})
	t.Run("external etcd with an explicit client listener", func(t *testing.T) {
		_, err := parseConfig([]string{"--etcd-endpoints", "10.0.0.1:2379", "--etcd-listen-client", "127.0.0.1:2379"}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "cannot be combined") {
			t.Fatalf("got %v, want a conflict error", err)
		}
	})
	t.Run("the embedded etcd's space quota", func(t *testing.T) {
		t.Setenv("KUBELAB_ETCD_QUOTA_BACKEND_BYTES", "67108864")
		if cfg, err := parseConfig(nil, io.Discard); err != nil || cfg.EtcdQuotaBackendBytes != 64<<20 {
			t.Fatalf("got %d (%v), want 64 MiB", cfg.EtcdQuotaBackendBytes, err)
		}
		for args, want := range map[string]string{
			"--etcd-quota-backend-bytes=-1":                                     "must not be negative",
			"--etcd-quota-backend-bytes=1048576 --etcd-endpoints=10.0.0.1:2379": "an external cluster's quota is its own",
		} {
			if _, err := parseConfig(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, want an error saying %q", args, err, want)
			}
		}
	})
	t.Run("adaptive in-flight limit on", func(t *testing.T) {
		t.Setenv("KUBELAB_ADAPTIVE_INFLIGHT_LIMIT", "true")
		cfg, err := parseConfig(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.AdaptiveInflightLimit || server.DefaultConfig().AdaptiveInflightLimit {
			t.Fatalf("adaptive limit %v with the variable true, default %v; want on, off by default", cfg.AdaptiveInflightLimit, server.DefaultConfig().AdaptiveInflightLimit)
		}
	})
	t.Run("quiz policy", func(t *testing.T) {
		t.Setenv("KUBELAB_QUIZ_ATTEMPTS", "0")
		cfg, err := parseConfig([]string{"--quiz-reveal", "never"}, io.Discard)
		if err != nil || cfg.QuizAttempts != 0 || cfg.QuizReveal != "never" {
			t.Fatalf("got %d attempts, reveal %q (%v); want 0 and never", cfg.QuizAttempts, cfg.QuizReveal, err)
		}
		for _, args := range [][]string{{"--quiz-reveal", "sometimes"}, {"--quiz-attempts", "-1"}} {
			if _, err := parseConfig(args, io.Discard); err == nil || !strings.Contains(err.Error(), args[0]) {
				t.Errorf("%q: got %v, want an error naming the flag", args, err)
			}
		}
	})
	t.Run("the kube core", func(t *testing.T) {
		if cfg, err := parseConfig(nil, io.Discard); err != nil || cfg.APIServer != "kubelab" {
			t.Fatalf("default core %q (%v), want kubelab", cfg.APIServer, err)
		}
		cfg, err := parseConfig([]string{"--apiserver=kube"}, io.Discard)
		if err != nil || cfg.APIServer != "kube" || cfg.StartKubeCore == nil {
			t.Fatalf("--apiserver=kube: core %q, started by %v (%v); want kube, and this binary's kube core", cfg.APIServer, cfg.StartKubeCore != nil, err)
		}
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--apiserver=kube", "--classroom=true", "--listen=:8080"}, "--apiserver=kube does not run a class yet"},
			{[]string{"--apiserver=kube", "--etcd-listen-client="}, "--etcd-listen-client must not be empty"},
			{[]string{"--apiserver=kubernetes"}, `--apiserver must be kubelab (kubelab's own core) or kube`},
		} {
			if _, err := parseConfig(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: got %v, want an error saying %q", c.args, err, c.want)
			}
		}
	})
	t.Run("a class serves no etcd client port unless asked", func(t *testing.T) {
		cfg, err := parseConfig([]string{"--classroom=true", "--listen=:8080"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.EtcdListenClient != "" {
			t.Fatalf("classroom etcd client listener %q, want none by default", cfg.EtcdListenClient)
		}
		for name, args := range map[string][]string{"flag": {"--classroom=true", "--etcd-listen-client=127.0.0.1:2379"}, "variable": {"--classroom=true"}} {
			if name == "variable" {
				t.Setenv("KUBELAB_ETCD_LISTEN_CLIENT", "127.0.0.1:2379")
			}
			cfg, err := parseConfig(args, io.Discard)
			if err != nil || cfg.EtcdListenClient != "127.0.0.1:2379" {
				t.Fatalf("asked by %s: listener %q, error %v; want the one asked for", name, cfg.EtcdListenClient, err)
			}
		}
	})
	t.Run("local mode stays on loopback", func(t *testing.T) {
		if _, err := parseConfig([]string{"--listen=:8080"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--local-mode-admin-on-network") {
			t.Fatalf("local mode on every interface: %v, want an error naming --local-mode-admin-on-network", err)
		}
		t.Setenv("KUBELAB_LOCAL_MODE_ADMIN_ON_NETWORK", "true")
		cfg, err := parseConfig([]string{"--listen=:8080"}, io.Discard)
		if err != nil || !cfg.LocalModeAdminOnNetwork {
			t.Fatalf("with the variable: %v, admin on network %v", err, cfg.LocalModeAdminOnNetwork)
		}
	})
	t.Run("watch cache flags", func(t *testing.T) {
		def := server.DefaultConfig()
		if !def.WatchCache || def.WatchCacheReplayEtcdHistory {
			t.Fatalf("defaults: watch cache %v, replay %v; want kube-apiserver's: on, no replay", def.WatchCache, def.WatchCacheReplayEtcdHistory)
		}
		var out bytes.Buffer
		cfg, err := parseConfig([]string{"--watch-cache=false", "--default-watch-cache-size=0"}, &out)
		if err != nil || cfg.WatchCache {
			t.Fatalf("--watch-cache=false: %v, watch cache %v", err, cfg.WatchCache)
		}
		if !strings.Contains(out.String(), "Flag --default-watch-cache-size has been deprecated, Watch caches are sized automatically.") {
			t.Fatalf("stderr %q, want kube-apiserver's deprecation warning", out.String())
		}
		t.Setenv("KUBELAB_WATCH_CACHE_REPLAY_ETCD_HISTORY", "true")
		if cfg, err := parseConfig(nil, io.Discard); err != nil || !cfg.WatchCacheReplayEtcdHistory {
			t.Fatalf("replay by variable: %v, %v", err, cfg.WatchCacheReplayEtcdHistory)
		}
		if _, err := parseConfig([]string{"--watch-cache=false"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--watch-cache-replay-etcd-history") {
			t.Fatalf("replay without a cache: %v, want an error naming the flag", err)
		}
	})
	t.Run("help", func(t *testing.T) {
		var out bytes.Buffer
		_, err := parseConfig([]string{"-h"}, &out)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "KUBELAB_DATA_DIR") {
			t.Fatalf("got %v and %q, want ErrHelp and usage naming the environment variables", err, out.String())
		}
	})
	t.Run("stray argument", func(t *testing.T) {
		if _, err := parseConfig([]string{"serve"}, io.Discard); err == nil {
			t.Fatal("want an error")
		}
	})
}

// syncBuffer collects a child's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := kubelabproc.Binary(t) // before the KUBELAB_ variables go: one may name it
	withoutKubelabEnv(t)

	t.Run("serves until SIGTERM", func(t *testing.T) {
		listen, dataDir := storagetest.FreeAddr(t), t.TempDir()
		cmd := exec.Command(bin, "--listen", listen, "--etcd-listen-client", storagetest.FreeAddr(t), "--data-dir", dataDir)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		waited := false
		defer func() {
			if !waited {
				cmd.Process.Kill()
				<-exited
			}
			if t.Failed() {
				t.Logf("kubelab's stderr:\n%s", stderr.String())
			}
		}()

		deadline := time.Now().Add(90 * time.Second)
		for {
			resp, err := http.Get("http://" + listen + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case err := <-exited:
				waited = true
				t.Fatalf("kubelab exited before it was ready: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("kubelab not ready after 90s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The banner is printed before /readyz can answer, but reaches the
		// buffer through exec's copying goroutine: give it a moment.
		for wait := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "kubelab is serving on http://"+listen); {
			if time.Now().After(wait) {
				t.Errorf("stderr does not say where kubelab serves")
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := os.Stat(filepath.Join(dataDir, "kubeconfig")); err != nil {
			t.Errorf("no admin kubeconfig: %v", err)
		}

		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			waited = true
			if err != nil {
				t.Fatalf("kubelab exited with %v after SIGTERM, want 0", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("kubelab still running 20s after SIGTERM")
		}
	})

	// What an unsafe start looks like from a shell: refused before anything
	// listens, with the way out in the message.
	for name, tc := range map[string]struct {
		args []string
		env  []string
		want string
	}{
		"local mode on the network": {args: []string{"--listen", ":0"}, want: "--local-mode-admin-on-network"},
		"a class from an unedited .env.example": {
			args: []string{"--classroom=true", "--listen", ":0"},
			env:  []string{"KUBELAB_JOIN_CODE=replace-with-the-code-you-tell-students"},
			want: "KUBELAB_JOIN_CODE",
		},
		"a guessable instructor token": {
			args: []string{"--classroom=true", "--listen", ":0"},
			env:  []string{"KUBELAB_INSTRUCTOR_TOKEN=1234567890123456"},
			want: "openssl rand -hex 16",
		},
	} {
		t.Run(name, func(t *testing.T) {
			// A kubelab that starts anyway is stopped, and fails the test.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(tc.args, "--data-dir", t.TempDir(), "--secure-listen", "127.0.0.1:0")...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("got %v and %q, want exit status 2 and an error naming %q", err, out, tc.want)
			}
		})
	}

	t.Run("bad flag", func(t *testing.T) {
		out, err := exec.Command(bin, "--listen", "nope", "--data-dir", t.TempDir()).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "--listen") {
			t.Fatalf("got %v and %q, want exit status 2 and an error about --listen", err, out)
		}
	})
}

func TestProbe(t *testing.T) {
	codes := map[string]int{"/ok": http.StatusOK, "/down": http.StatusInternalServerError}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(codes[r.URL.Path])
	}))
	defer srv.Close()
	for path, want := range map[string]int{"/ok": 0, "/down": 1} {
		if got := probe([]string{srv.URL + path}, io.Discard); got != want {
			t.Errorf("probe %s = %d, want %d", path, got, want)
		}
	}
	if got := probe([]string{"http://127.0.0.1:1/readyz"}, io.Discard); got != 1 {
		t.Errorf("probe of nothing = %d, want 1", got)
	}
}
