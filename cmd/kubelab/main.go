// Command kubelab serves the "API Server and etcd Watch" lab: a
// Kubernetes-style API server over a real etcd, embedded by default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/peterbourgon/ff/v3"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/controlplane"
	"github.com/kubelab/kubelab/server/terminal"
)

func main() {
	// A terminal command's child process runs it and exits here.
	terminal.RunCommandIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		// The container image has no shell or curl: its HEALTHCHECK runs this.
		os.Exit(probe(os.Args[2:], os.Stderr))
	}
	cfg, err := parseConfig(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelab: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "kubelab: %v\n", err)
		os.Exit(1)
	}
}

// parseConfig reads flags, then KUBELAB_* environment variables for flags not
// given, over server.DefaultConfig, and validates the result.
func parseConfig(args []string, stderr io.Writer) (server.Config, error) {
	cfg := server.DefaultConfig()
	// Only this binary links kube-apiserver's code (--apiserver=kube).
	cfg.StartKubeCore = controlplane.Start
	fs := flag.NewFlagSet("kubelab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "host:port the API server listens on")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for etcd's data, the admin kubeconfig and the admin token's hash")
	fs.BoolVar(&cfg.LocalModeAdminOnNetwork, "local-mode-admin-on-network", cfg.LocalModeAdminOnNetwork, "let local mode listen beyond loopback, where every request without a token is cluster-admin: anyone who reaches the port owns the lab")
	fs.StringVar(&cfg.EtcdListenClient, "etcd-listen-client", cfg.EtcdListenClient, "host:port where the embedded etcd serves clients such as etcdctl; empty for none. In classroom mode none unless given, and then TLS with client certificates only")
	fs.Int64Var(&cfg.EtcdQuotaBackendBytes, "etcd-quota-backend-bytes", cfg.EtcdQuotaBackendBytes, "the embedded etcd's space quota in bytes, as etcd's --quota-backend-bytes; 0 is etcd's default, 2 GiB. When it is reached, kubelab compacts and defragments etcd and disarms its alarm")
	endpoints := fs.String("etcd-endpoints", "", "comma-separated endpoints of an external etcd cluster to use instead of the embedded one")
	fs.DurationVar(&cfg.CompactionInterval, "compaction-interval", cfg.CompactionInterval, "how often etcd's history is compacted; 0 disables compaction")
	fs.BoolVar(&cfg.WatchCache, "watch-cache", cfg.WatchCache, "serve watches from a watch cache per resource, as kube-apiserver's --watch-cache; false serves each watch from etcd")
	fs.Int("default-watch-cache-size", 100, "deprecated and ignored, as in kube-apiserver 1.37: watch caches are sized automatically (100 to 102,400 events)")
	fs.BoolVar(&cfg.WatchCacheReplayEtcdHistory, "watch-cache-replay-etcd-history", cfg.WatchCacheReplayEtcdHistory, "beyond kube-apiserver: start each watch cache with the history etcd still holds, so clients resume across a restart instead of getting 410 Gone")
	fs.IntVar(&cfg.MaxStudents, "max-students", cfg.MaxStudents, "how many students may join the class (classroom mode); each gets a namespace and a quota. 0 for no limit")
	fs.IntVar(&cfg.MaxJoinsPerAddress, "max-joins-per-address", cfg.MaxJoinsPerAddress, fmt.Sprintf("how many students may join the class from one client address, an IPv6 one by its /64 (classroom mode; %d unless set): a student's throwaway accounts each bring requests in flight of their own. 0 for no limit, as a class behind one NAT or proxy (without --proxy-protocol-from) needs", server.DefaultMaxJoinsPerAddress))
	fs.DurationVar(&cfg.StuckAfter, "stuck-after", cfg.StuckAfter, "how long without lab progress the instructor's dashboard marks a student as stuck")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "minimum level logged: debug, info, warn or error")
	fs.BoolVar(&cfg.Profiling, "profiling", cfg.Profiling, "serve Go's profiler at /debug/pprof/, as kube-apiserver's --profiling does")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", cfg.MaxRequestsInflight, "most non-mutating requests served at once (watches not counted); more get 429, as in kube-apiserver")
	fs.IntVar(&cfg.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", cfg.MaxMutatingRequestsInflight, "most mutating requests served at once; more get 429")
	fs.BoolVar(&cfg.AdaptiveInflightLimit, "adaptive-inflight-limit", cfg.AdaptiveInflightLimit, "lower the in-flight limits below those maxima while admitted requests' latency rises past its no-load baseline, refusing the excess with 429")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "time limit of every request but watches; past it the client gets 504")
	// The binary runs the terminal's commands in processes of its own:
	// only a binary whose main calls terminal.RunCommandIfAsked can, so
	// server.DefaultConfig, which tests' own binaries use, keeps them in.
	fs.BoolVar(&cfg.TerminalProcesses, "terminal-processes", true, "run each line of the web terminal in a process of its own, in a shell written in Go (pipes, $(...), loops, heredocs, jq and the usual text tools), with memory and CPU limits; false runs kubectl alone, in the server")
	fs.StringVar(&cfg.APIServer, "apiserver", cfg.APIServer, "the core that serves the Kubernetes API: kubelab (kubelab's own, with the lesson's pages) or kube (new: kube-apiserver's own code, in-process; the API only, not yet the pages or classroom mode)")
	fs.BoolVar(&cfg.SimulatedNode, "simulated-node", cfg.SimulatedNode, "run a simulated node (kubelab-node) on which pods are scheduled and reported Running; no container runs")
	fs.DurationVar(&cfg.PodStartDelay, "pod-start-delay", cfg.PodStartDelay, "how long the simulated node keeps a new pod Pending before it reports it Running")
	fs.BoolVar(&cfg.Classroom, "classroom", cfg.Classroom, "classroom mode: students sign in and each gets a namespace; anonymous requests are no longer cluster-admin")
	fs.StringVar(&cfg.JoinCode, "join-code", cfg.JoinCode, "in classroom mode, the code students must type to join (empty: anyone who reaches the page may join)")
	fs.StringVar(&cfg.ClassName, "class-name", cfg.ClassName, "in classroom mode, the class's name (e.g. k8s-101), which graders filter results by")
	fs.StringVar(&cfg.SecureListen, "secure-listen", cfg.SecureListen, "in classroom mode, host:port of the HTTPS listener students' kubectl uses")
	fs.IntVar(&cfg.PublishedSecurePort, "published-secure-port", cfg.PublishedSecurePort, "in classroom mode, the port students reach --secure-listen at, when Docker or a proxy publishes it on another (kubeconfigs and the redirect from plain HTTP name it); 0 for --secure-listen's own")
	proxyFrom := fs.String("proxy-protocol-from", "", "comma-separated addresses or CIDR ranges of proxies in front of kubelab that send the PROXY protocol (HAProxy's send-proxy-v2): limits per client address then see each client, not the proxy. A header from any other peer closes its connection")
	tlsSANs := fs.String("tls-san", "", "in classroom mode, comma-separated host names and IP addresses students reach the class at, besides localhost and private addresses (10.x, 172.16-31.x, 192.168.x, ...): kubelab's CA may sign for these and nothing else")
	fs.DurationVar(&cfg.CAValidity, "ca-validity", cfg.CAValidity, "how long a CA kubelab makes is valid (at most 9552h, 398 days); kubelab replaces it a day before it expires")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", cfg.TLSCertFile, "in classroom mode, a PEM certificate chain (leaf first) to serve HTTPS with instead of kubelab's own CA, say one students' browsers already trust")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key-file", cfg.TLSKeyFile, "the private key of --tls-cert-file")
	fs.StringVar(&cfg.AdminToken, "admin-token", cfg.AdminToken, "the admin kubeconfig's token (e.g. openssl rand -hex 16; prefer the environment variable), instead of one kubelab makes; replicas given the same one all accept the same admin kubeconfig")
	fs.StringVar(&cfg.InstructorToken, "instructor-token", cfg.InstructorToken, "bearer token of the instructor (e.g. openssl rand -hex 16; prefer the environment variable)")
	fs.StringVar(&cfg.GraderToken, "grader-token", cfg.GraderToken, "bearer token of the grader endpoint's client (e.g. openssl rand -hex 16; prefer the environment variable)")
	fs.IntVar(&cfg.QuizAttempts, "quiz-attempts", cfg.QuizAttempts, "how many attempts each student may submit at each quiz; 0 for no limit")
	fs.StringVar(&cfg.QuizReveal, "quiz-reveal", cfg.QuizReveal, "when students see the right answers and explanations of the questions they answered: after-submit, after-last-attempt, after-close (once the instructor closes the quiz, or at --quiz-closes-at; the default in classroom mode) or never")
	closesAt := fs.String("quiz-closes-at", "", "when every quiz closes by itself, in RFC 3339 (2027-01-15T17:00:00+07:00): no attempt is taken after it, and after-close shows the answers")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kubelab [flags]\n\nEvery flag can also be set by an environment variable: KUBELAB_ and the flag's\nname in capitals with - as _, e.g. KUBELAB_DATA_DIR for --data-dir.\n\n")
		fs.PrintDefaults()
	}
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("KUBELAB")); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if isSet(fs, "default-watch-cache-size") {
		// kube-apiserver's own warning (pflag's MarkDeprecated) for a flag
		// it accepts and ignores.
		fmt.Fprintln(stderr, "Flag --default-watch-cache-size has been deprecated, Watch caches are sized automatically. This flag is no-op and it will be removed in a future version.")
	}
	// A class's etcd serves no client port unless the instructor asks for
	// one: students' machines and the pages they open share its network.
	if cfg.Classroom && !isSet(fs, "etcd-listen-client") {
		cfg.EtcdListenClient = ""
	}
	// In a class, a throwaway account must not harvest the key for a real
	// one: answers show once the quiz closes, unless the instructor
	// chooses otherwise.
	if cfg.Classroom && !isSet(fs, "quiz-reveal") {
		cfg.QuizReveal = string(quiz.RevealAfterClose)
	}
	// A class counts its sign-ins per address, unless the instructor
	// knows the class shares one.
	if cfg.Classroom && !isSet(fs, "max-joins-per-address") {
		cfg.MaxJoinsPerAddress = server.DefaultMaxJoinsPerAddress
	}
	if *closesAt != "" {
		t, err := time.Parse(time.RFC3339, *closesAt)
		if err != nil {
			return cfg, fmt.Errorf("--quiz-closes-at %q: give a time in RFC 3339, such as 2027-01-15T17:00:00+07:00", *closesAt)
		}
		cfg.QuizClosesAt = t
	}
	for _, p := range strings.Split(*proxyFrom, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.ProxyProtocolFrom = append(cfg.ProxyProtocolFrom, p)
		}
	}
	for _, h := range strings.Split(*tlsSANs, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.TLSSANs = append(cfg.TLSSANs, h)
		}
	}
	if *endpoints != "" {
		for _, ep := range strings.Split(*endpoints, ",") {
			cfg.EtcdEndpoints = append(cfg.EtcdEndpoints, strings.TrimSpace(ep))
		}
		// The default client listener belongs to the embedded etcd, which an
		// external cluster replaces; only an explicit one is a conflict.
		if !isSet(fs, "etcd-listen-client") {
			cfg.EtcdListenClient = ""
		}
	}
	return cfg, cfg.Validate()
}

// isSet reports whether the flag was given, on the command line or by its
// KUBELAB_ variable: ff sets both through fs.Set, which Visit sees.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// probe is `kubelab probe [URL]`: exit 0 if URL (by default the local
// /readyz) answers 200 within five seconds, 1 otherwise.
func probe(args []string, stderr io.Writer) int {
	url := "http://127.0.0.1:8080/readyz"
	if len(args) > 0 {
		url = args[0]
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		fmt.Fprintf(stderr, "kubelab probe: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "kubelab probe: %s: %s\n%s\n", url, resp.Status, body)
		return 1
	}
	return 0
}
