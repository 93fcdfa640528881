package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/pki"
)

// DefaultMaxJoinsPerAddress is kubelab's --max-joins-per-address: a
// student with a laptop and a phone, and a sign-in again after a lost
// session, and not the throwaways that, 50 requests in flight each, fill
// the class's 200 write slots (three hold 150).
const DefaultMaxJoinsPerAddress = 3

// Config is everything kubelab needs to start. main fills it from flags and
// environment variables; tests fill it directly.
type Config struct {
	// Listen is the host:port the HTTP server listens on; port 0 picks a free one.
	// In local mode it must be a loopback address unless
	// LocalModeAdminOnNetwork is set.
	Listen string
	// LocalModeAdminOnNetwork lets local mode listen (and its etcd serve)
	// beyond loopback and answer any Host name. Local mode makes every
	// request without a token cluster-admin, so this gives the lab to
	// whoever can reach the port: on a café's network, everyone there.
	LocalModeAdminOnNetwork bool
	// DataDir holds the embedded etcd's data, the admin kubeconfig and the
	// admin token's hash.
	DataDir string
	// EtcdListenClient is where the embedded etcd serves clients such as
	// etcdctl. Empty means no client listener: the server reaches the member
	// in-process and nothing else can. In classroom mode the listener serves
	// TLS only, to clients with a certificate from the etcd CA kubelab keeps
	// in DataDir/etcd-pki (cmd/kubelab leaves it empty unless asked).
	EtcdListenClient string
	// EtcdUnsafeNoFsync has the embedded member skip fsync: only for tests,
	// whose data dies with them anyway (a crash of kubelab alone loses
	// nothing either way; a lost machine would). cmd/kubelab has no flag
	// for it.
	EtcdUnsafeNoFsync bool
	// EtcdQuotaBackendBytes is the embedded member's space quota, as etcd's
	// --quota-backend-bytes; 0 is etcd's default (2 GiB). Past it etcd
	// refuses every write until kubelab has compacted, defragmented and
	// disarmed it (storage/etcdspace).
	EtcdQuotaBackendBytes int64
	// EtcdEndpoints, when set, points at an external etcd cluster, and no
	// embedded member is started.
	EtcdEndpoints []string
	// CompactionInterval is how often etcd's history is compacted, as
	// kube-apiserver's --etcd-compaction-interval; 0 disables compaction. Start
	// hands it to the Compactor given to Server.SetCompactor.
	CompactionInterval time.Duration
	// WatchCache serves watches from a watch cache per resource, as
	// kube-apiserver's --watch-cache (on by default); off, every watch is
	// an etcd watch of its own, and a compacted revision gets etcd's 410.
	WatchCache bool
	// WatchCacheReplayEtcdHistory goes beyond kube-apiserver: each watch
	// cache starts its window with the history etcd still holds, so that a
	// client resumes across a restart instead of getting 410 and relisting.
	WatchCacheReplayEtcdHistory bool
	// WatchCacheEventFreshness is how young a watch cache's oldest event
	// must be for a full window to grow rather than drop it. Zero is
	// kube's 75 s; only tests shorten it (no flag sets it), to move the
	// window without waiting.
	WatchCacheEventFreshness time.Duration
	// ShutdownTimeout bounds how long in-flight requests get to finish on
	// shutdown; 0 means the default.
	ShutdownTimeout time.Duration
	// LogLevel is the minimum level logged: debug, info, warn or error.
	LogLevel string
	// Profiling serves Go's profiler at /debug/pprof/, as kube-apiserver's
	// --profiling does.
	Profiling bool
	// Logger receives the server's logs; nil means text logs on stderr at LogLevel.
	Logger *slog.Logger

	// MaxRequestsInflight and MaxMutatingRequestsInflight cap the
	// requests served at once, as kube-apiserver's flags of those names;
	// more are refused with 429. Watches are not counted.
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// AdaptiveInflightLimit lowers the limits below those caps while the
	// latency of admitted requests rises past what it is without load (see
	// package adaptive), so that the excess is refused at once instead of
	// every request waiting for the CPU; the caps stay the maxima. Off by
	// default: on a machine shared with other busy processes it reads their
	// CPU use as overload and refuses what kubelab could serve (see
	// docs/RELIABILITY.md).
	AdaptiveInflightLimit bool
	// RequestTimeout bounds every request that is not long-running.
	RequestTimeout time.Duration
	// TerminalProcesses runs each of the terminal's lines in a child
	// process of kubelab's binary, in its shell, under memory and CPU
	// limits, rather than kubectl alone in the server (see package
	// terminal). kubelab's binary turns it on unless told otherwise; it is
	// off here because a process can run a terminal's command only if its
	// main calls terminal.RunCommandIfAsked, which tests' binaries do not.
	TerminalProcesses bool

	// APIServer chooses the core that serves the Kubernetes API:
	// APIServerKubelab (kubelab's own, the default) or APIServerKube
	// (kube-apiserver's own code in-process, new, see kubecore.go).
	APIServer string
	// StartKubeCore starts the kube core. cmd/kubelab sets it, so that
	// only the binary links k8s.io/kubernetes; without it,
	// --apiserver=kube is refused.
	StartKubeCore StartKubeCore

	// SimulatedNode runs a simulated node, scheduler and kubelet: pods are
	// bound to node kubelab-node and reported Running after PodStartDelay.
	SimulatedNode bool
	PodStartDelay time.Duration

	// Classroom turns on classroom mode: students sign in with a display
	// name and get a namespace of their own; anonymous requests get only
	// what kube gives them (discovery, health). Off is local mode, where
	// the local user is cluster-admin, as on a kind cluster.
	Classroom bool
	// JoinCode, if set, is what students must type to join the class.
	JoinCode string
	// ClassName names the class students join; graders filter results by it.
	ClassName string
	// SecureListen is the host:port of the HTTPS listener that classroom
	// mode adds for kubectl (which sends tokens only over TLS).
	SecureListen string
	// PublishedSecurePort is the port students reach the HTTPS listener
	// at when Docker or a proxy publishes it on another than
	// SecureListen's (26443:6443, say): the kubeconfigs, the admin's
	// included, and the redirect from plain HTTP name it. 0 is
	// SecureListen's own port.
	PublishedSecurePort int
	// ProxyProtocolFrom are the addresses or CIDR ranges of proxies in
	// front of kubelab that send the PROXY protocol (HAProxy's send-proxy),
	// so that limits per client address see the client, not the proxy.
	ProxyProtocolFrom []string
	// TLSSANs are the host names and addresses, besides localhost and the
	// private address ranges, that students reach the class at: kubelab's
	// CA may sign for them and for nothing else (see server/pki).
	TLSSANs []string
	// CAValidity is how long a CA kubelab makes is valid.
	CAValidity time.Duration
	// TLSCertFile and TLSKeyFile, if set, are the certificate chain and
	// key classroom mode serves HTTPS with, in place of kubelab's own CA.
	TLSCertFile string
	TLSKeyFile  string
	// AdminToken, if set, is the admin kubeconfig's token, instead of one
	// kubelab makes and keeps in its data directory: replicas given the
	// same one all accept it, so the admin kubeconfig works through a
	// proxy whichever replica answers.
	AdminToken string
	// InstructorToken and GraderToken, if set, are bearer tokens for the
	// instructor (class progress and results) and for a grader (the
	// results endpoint). They are kept only as hashes.
	InstructorToken string
	GraderToken     string
	// MaxStudents is how many students may join the class (classroom
	// mode); 0 is no limit. Each gets a namespace and a quota
	// (studentQuotaHard): 100 of them can hold 1.6 GiB, within etcd's
	// default 2 GiB quota.
	MaxStudents int
	// MaxJoinsPerAddress is how many students may join from one client
	// address (an IPv6 one by its /64); 0 is no limit, the default here.
	// kubelab's --classroom sets DefaultMaxJoinsPerAddress unless
	// --max-joins-per-address is given.
	MaxJoinsPerAddress int
	// StuckAfter is how long without lab progress the instructor's
	// dashboard marks a student as stuck.
	StuckAfter time.Duration
	// QuizAttempts is how many attempts each student may submit at each
	// quiz; 0 is no limit.
	QuizAttempts int
	// QuizReveal is when students see right answers and explanations:
	// after-submit, after-last-attempt, after-close or never.
	QuizReveal string
	// QuizClosesAt, if set, is when every quiz closes by itself, as if the
	// instructor closed it then.
	QuizClosesAt time.Time
}

// DefaultConfig returns the configuration `go run ./cmd/kubelab` runs with.
func DefaultConfig() Config {
	return Config{
		Listen:             "127.0.0.1:8080",
		DataDir:            "./kubelab-data",
		EtcdListenClient:   "127.0.0.1:2379",
		CompactionInterval: 5 * time.Minute,
		WatchCache:         true,
		StuckAfter:         10 * time.Minute,
		MaxStudents:        100,
		QuizAttempts:       3,
		QuizReveal:         string(quiz.RevealAfterLastAttempt),
		ShutdownTimeout:    10 * time.Second,
		LogLevel:           "info",
		Profiling:          true,
		SecureListen:       ":6443",
		CAValidity:         pki.DefaultValidity,

		MaxRequestsInflight:         400,
		MaxMutatingRequestsInflight: 200,
		RequestTimeout:              time.Minute,

		SimulatedNode: true,
		PodStartDelay: 2 * time.Second,

		APIServer: APIServerKubelab,
	}
}

// Validate reports the first thing wrong with the configuration, naming the
// flag that sets it.
func (c Config) Validate() error {
	if err := validateListen("--listen", c.Listen); err != nil {
		return err
	}
	if strings.TrimSpace(c.DataDir) == "" {
		return errors.New("--data-dir must not be empty: it holds etcd's data and the admin kubeconfig")
	}
	if err := c.validateEtcd(); err != nil {
		return err
	}
	if err := c.validateAPIServer(); err != nil {
		return err
	}
	if c.CompactionInterval < 0 {
		return fmt.Errorf("--compaction-interval must not be negative (0 disables compaction), got %s", c.CompactionInterval)
	}
	if c.WatchCacheReplayEtcdHistory && !c.WatchCache {
		return errors.New("--watch-cache-replay-etcd-history needs the watch cache: drop it or --watch-cache=false")
	}
	if c.QuizAttempts < 0 {
		return fmt.Errorf("--quiz-attempts must not be negative (0 is no limit), got %d", c.QuizAttempts)
	}
	if c.MaxJoinsPerAddress < 0 {
		return fmt.Errorf("--max-joins-per-address must not be negative (0 is no limit), got %d", c.MaxJoinsPerAddress)
	}
	if _, err := quiz.ParseReveal(c.QuizReveal); err != nil {
		return fmt.Errorf("--quiz-reveal: %w", err)
	}
	if c.StuckAfter < 0 {
		return fmt.Errorf("--stuck-after must not be negative, got %s", c.StuckAfter)
	}
	if c.ShutdownTimeout < 0 {
		return fmt.Errorf("shutdown timeout must not be negative, got %s", c.ShutdownTimeout)
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return err
	}
	if c.MaxRequestsInflight < 1 || c.MaxMutatingRequestsInflight < 1 {
		return fmt.Errorf("--max-requests-inflight and --max-mutating-requests-inflight must be at least 1, got %d and %d", c.MaxRequestsInflight, c.MaxMutatingRequestsInflight)
	}
	if c.PodStartDelay < 0 {
		return fmt.Errorf("--pod-start-delay must not be negative, got %s", c.PodStartDelay)
	}
	if c.RequestTimeout <= 0 {
		return fmt.Errorf("--request-timeout must be positive, got %s", c.RequestTimeout)
	}
	if err := c.validateLocalModeExposure(); err != nil {
		return err
	}
	if c.Classroom {
		if err := c.validateClassroomSecrets(); err != nil {
			return err
		}
		if err := validateListen("--secure-listen", c.SecureListen); err != nil {
			return fmt.Errorf("%w (classroom mode serves kubectl over HTTPS there)", err)
		}
		if sameAddr(c.SecureListen, c.Listen) {
			return fmt.Errorf("--secure-listen %q and --listen %q are the same address", c.SecureListen, c.Listen)
		}
		if c.PublishedSecurePort < 0 || c.PublishedSecurePort > 65535 {
			return fmt.Errorf("--published-secure-port %d is not a port (1 to 65535, or 0 for --secure-listen's own)", c.PublishedSecurePort)
		}
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	for _, t := range []struct{ flag, token string }{{"--admin-token", c.AdminToken}, {"--instructor-token", c.InstructorToken}, {"--grader-token", c.GraderToken}} {
		if t.token != "" {
			if err := checkToken(t.flag, t.token); err != nil {
				return err
			}
		}
	}
	if c.ClassName != "" && len(validation.IsDNS1123Label(c.ClassName)) > 0 {
		return fmt.Errorf("--class-name %q: use lower-case letters, digits and '-', as in k8s-101", c.ClassName)
	}
	if c.InstructorToken != "" && c.InstructorToken == c.GraderToken {
		return errors.New("--instructor-token and --grader-token must differ: they are different roles")
	}
	if c.AdminToken != "" && (c.AdminToken == c.InstructorToken || c.AdminToken == c.GraderToken) {
		return errors.New("--admin-token must differ from --instructor-token and --grader-token: the admin may do anything")
	}
	return nil
}

// validateTLS checks what classroom mode's HTTPS is served with: kubelab's
// CA, for the hosts --tls-san names and no longer than pki.MaxValidity, or
// the instructor's own certificate.
func (c Config) validateTLS() error {
	if c.CAValidity < 2*24*time.Hour || c.CAValidity > pki.MaxValidity {
		return fmt.Errorf("--ca-validity %s: give between 48h (two days) and %s (%d days): students import the CA, and its key could intercept their HTTPS until it expires", c.CAValidity, pki.MaxValidity, int(pki.MaxValidity.Hours()/24))
	}
	for _, h := range c.TLSSANs {
		if net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(h)) > 0 {
			return fmt.Errorf("--tls-san %q: give a host name (lab.example.org) or an IP address, with no port or wildcard", h)
		}
	}
	for _, p := range c.ProxyProtocolFrom {
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			return fmt.Errorf("--proxy-protocol-from %q: give an address (10.0.0.5) or a range (10.0.0.0/8) of the proxy", p)
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: give both, or neither for kubelab's own CA")
	}
	if c.TLSCertFile != "" {
		if !c.Classroom {
			return errors.New("--tls-cert-file is for classroom mode's HTTPS; local mode serves plain HTTP on loopback")
		}
		if len(c.TLSSANs) > 0 {
			return errors.New("--tls-san names the hosts kubelab's own CA may sign for; with --tls-cert-file, the certificate names its hosts itself")
		}
	}
	return nil
}

// validateEtcd checks the embedded etcd's client port or the external
// cluster's endpoints, which exclude each other.
func (c Config) validateEtcd() error {
	if len(c.EtcdEndpoints) > 0 {
		if c.EtcdListenClient != "" {
			return errors.New("--etcd-listen-client configures the embedded etcd; it cannot be combined with --etcd-endpoints, which uses an external etcd cluster instead")
		}
		if c.EtcdQuotaBackendBytes != 0 {
			return errors.New("--etcd-quota-backend-bytes configures the embedded etcd; an external cluster's quota is its own --quota-backend-bytes")
		}
		for _, ep := range c.EtcdEndpoints {
			if _, err := etcdURL(ep); err != nil {
				return fmt.Errorf("--etcd-endpoints: %w", err)
			}
		}
	}
	if c.EtcdQuotaBackendBytes < 0 {
		return fmt.Errorf("--etcd-quota-backend-bytes must not be negative (0 is etcd's default, 2 GiB), got %d", c.EtcdQuotaBackendBytes)
	}
	if c.EtcdListenClient != "" {
		if strings.HasPrefix(strings.TrimSpace(c.EtcdListenClient), "https://") {
			return fmt.Errorf("--etcd-listen-client %q: write host:port; in classroom mode the port serves TLS with client certificates by itself, in local mode plain HTTP on loopback", c.EtcdListenClient)
		}
		u, err := etcdURL(c.EtcdListenClient)
		if err != nil {
			return fmt.Errorf("--etcd-listen-client: %w", err)
		}
		if sameAddr(u.Host, c.Listen) {
			return fmt.Errorf("--etcd-listen-client %q and --listen %q are the same address", c.EtcdListenClient, c.Listen)
		}
	}
	return nil
}

// validateLocalModeExposure keeps local mode on loopback: there a request
// without a token is cluster-admin (as on a kind cluster, which also binds
// loopback), and so is anyone who reaches the embedded etcd.
func (c Config) validateLocalModeExposure() error {
	if c.Classroom || c.LocalModeAdminOnNetwork {
		return nil
	}
	if !isLoopbackAddr(c.Listen) {
		return fmt.Errorf("--listen %q is not a loopback address: in local mode every request without a token is cluster-admin, so anyone who can reach it owns the lab. Listen on 127.0.0.1, run a class with --classroom, or pass --local-mode-admin-on-network to give admin to everyone on the network", c.Listen)
	}
	if c.EtcdListenClient != "" {
		if u, err := etcdURL(c.EtcdListenClient); err == nil && !isLoopbackAddr(u.Host) {
			return fmt.Errorf("--etcd-listen-client %q is not a loopback address: whoever reaches etcd can make themselves cluster-admin. Use 127.0.0.1, or pass --local-mode-admin-on-network to give that to everyone on the network", c.EtcdListenClient)
		}
	}
	return nil
}

// validateClassroomSecrets refuses what a copied but unedited .env.example
// would start a class with.
func (c Config) validateClassroomSecrets() error {
	if c.JoinCode != "" {
		return checkJoinCode(c.JoinCode)
	}
	return nil
}

// isLoopbackAddr: host:port whose host is "localhost" or a loopback IP. A
// wildcard (":8080", "0.0.0.0") is every interface, not loopback; another
// name could resolve to anything.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validateListen(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want host:port, e.g. \":8080\" or \"127.0.0.1:8080\"", flag, addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s %q: port %q is not a number from 0 to 65535", flag, addr, port)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%s %q: %q is not a host name or IP address", flag, addr, host)
	}
	return nil
}

// etcdURL accepts "host:port" as well as "http://host:port", since etcdctl
// and kube-apiserver's --etcd-servers accept both.
func etcdURL(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errors.New("empty etcd address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not an etcd address like 127.0.0.1:2379", raw)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%q: only plain http is supported for etcd (no TLS options yet)", raw)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("%q: an etcd address is just host:port", raw)
	}
	if err := validateListen("etcd address", u.Host); err != nil {
		return nil, fmt.Errorf("%q: want host:port, e.g. 127.0.0.1:2379", raw)
	}
	return u, nil
}

// sameAddr reports whether two host:port addresses would collide when both
// are listened on. A port of 0 never collides.
func sameAddr(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wildcard(ha) || wildcard(hb)
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
