// Package embedetcd runs an etcd member inside the kubelab process, so that
// `go run ./cmd/kubelab` needs nothing else installed, and so that tests run
// against a real etcd rather than a mock of one.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
)

// Config describes one embedded etcd member.
type Config struct {
	// Name is the member's name; it must match its entry in InitialCluster.
	Name string
	// DataDir holds the member's WAL and database.
	DataDir string
	// ClientURL is where etcdctl and other clients reach this member,
	// e.g. "http://127.0.0.1:2379". Empty means no client listener: the
	// member is reachable only from this process.
	ClientURL string
	// ClientTLS, if set, makes the client listener serve TLS only, to
	// clients with a certificate from its CA (ClientURL's scheme is then
	// https whatever it was written as).
	ClientTLS *ClientTLS
	// PeerURL is where the other members reach this one. For a single-member
	// cluster it may be left empty (a loopback port is picked).
	PeerURL string
	// InitialCluster lists every member as "name=peerURL,...". Empty means a
	// single-member cluster made of this member alone.
	InitialCluster string
	// ClusterToken keeps members of different clusters apart.
	ClusterToken string
	// UnsafeNoFsync skips fsync: only for tests, where a lost machine does not matter.
	UnsafeNoFsync bool
	// ProgressNotifyInterval makes etcd tell watchers its revision this often
	// even when nothing they watch changes; kube-apiserver's etcd runs with 5s.
	ProgressNotifyInterval time.Duration
	// QuotaBackendBytes is the member's space quota, as etcd's
	// --quota-backend-bytes: past it etcd raises the NOSPACE alarm and
	// refuses writes. 0 is etcd's default, 2 GiB.
	QuotaBackendBytes int64
	// StartTimeout bounds how long Start waits for the member to become ready.
	StartTimeout time.Duration
	// Logger receives etcd's own logs; nil logs etcd's errors to stderr,
	// except the ones every shutdown produces.
	Logger *zap.Logger
}

// Member is a running embedded etcd member.
type Member struct {
	etcd     *embed.Etcd
	tls      *ClientTLS
	client   *clientv3.Client
	stopping *atomic.Bool
	stopOnce sync.Once
}

// Start starts the member and waits until it has joined its cluster and can
// serve requests.
func Start(cfg Config) (*Member, error) {
	stopping := new(atomic.Bool)
	if cfg.Logger == nil {
		cfg.Logger = errorLogger(stopping)
	}
	ecfg, err := etcdConfig(cfg)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd %q in %s: %w", ecfg.Name, cfg.DataDir, err)
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd %q failed while starting: %w", ecfg.Name, err)
	case <-time.After(timeout):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("embedded etcd %q not ready after %s (is a quorum of its cluster running?)", ecfg.Name, timeout)
	}
	m := &Member{etcd: e, stopping: stopping, tls: cfg.ClientTLS}
	if m.client, err = m.connect(); err != nil {
		e.Close()
		return nil, fmt.Errorf("connecting to embedded etcd: %w", err)
	}
	return m, nil
}

// connect gives kubelab a client of its own member. Over a client listener
// it is a network client, as etcdctl's, with the admin certificate when
// the listener wants one: the same path every other client takes, and
// the one the performance figures were measured on. Without a listener it
// is the in-process client, which no other process can reach.
func (m *Member) connect() (*clientv3.Client, error) {
	if len(m.etcd.Clients) == 0 {
		return v3client.New(m.etcd.Server), nil
	}
	cfg := clientv3.Config{
		Endpoints:   []string{m.ClientURL()},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if m.tls != nil {
		tc, err := m.tls.clientConfig()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	return clientv3.New(cfg)
}

// snapshotCount and snapshotCatchUpEntries size the raft log for a class,
// where one student may write 1 MiB objects over and over. etcd keeps
// snapshotCatchUpEntries entries in memory for followers that fall
// behind (5,000 by default: 374 MB of a kubelab's memory was its raft log
// after a few minutes of such rewrites), and its write-ahead log on disk
// holds the entries since the last snapshot (10,000 by default). A
// follower further behind than 500 entries is sent a snapshot instead,
// which for a class's database is a few megabytes.
const (
	snapshotCount          = 2000
	snapshotCatchUpEntries = 500
)

func etcdConfig(cfg Config) (*embed.Config, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded etcd needs a data directory")
	}
	ecfg := embed.NewConfig()
	ecfg.Dir = cfg.DataDir
	if cfg.Name != "" {
		ecfg.Name = cfg.Name
	}
	ecfg.UnsafeNoFsync = cfg.UnsafeNoFsync
	ecfg.SnapshotCount = snapshotCount
	ecfg.SnapshotCatchUpEntries = snapshotCatchUpEntries
	ecfg.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	ecfg.QuotaBackendBytes = cfg.QuotaBackendBytes
	ecfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(cfg.Logger)
	// Stopping the member must wait for its watch streams' handlers: a
	// watch's send loop that still reads the backend after it is closed
	// crashes the process on a nil bbolt transaction (etcd-io/etcd#14256),
	// and by default gRPC's Stop returns with handlers still running.
	ecfg.GRPCAdditionalServerOptions = append(ecfg.GRPCAdditionalServerOptions, grpc.WaitForHandlers(true))
	if cfg.ClusterToken != "" {
		ecfg.InitialClusterToken = cfg.ClusterToken
	}

	peer := cfg.PeerURL
	if peer == "" {
		if cfg.InitialCluster != "" {
			return nil, errors.New("a member of a multi-member cluster needs a peer URL")
		}
		// A member alone needs its peer port only because etcd insists on
		// one. On plain HTTP a page that found the port by DNS rebinding
		// could talk raft to it; behind etcd's self-signed TLS no browser
		// completes a request.
		peer = "https://127.0.0.1:0"
		ecfg.PeerAutoTLS = true
	}
	peerURL, err := parseURL("peer", peer)
	if err != nil {
		return nil, err
	}
	ecfg.ListenPeerUrls = []url.URL{*peerURL}
	ecfg.AdvertisePeerUrls = []url.URL{*peerURL}
	if cfg.InitialCluster != "" {
		ecfg.InitialCluster = cfg.InitialCluster
	} else {
		ecfg.InitialCluster = ecfg.Name + "=" + peerURL.String()
	}

	ecfg.ListenClientUrls = nil
	ecfg.AdvertiseClientUrls = nil
	closeToBrowsers(ecfg, "")
	if cfg.ClientURL != "" {
		clientURL, err := parseURL("client", cfg.ClientURL)
		if err != nil {
			return nil, err
		}
		if cfg.ClientTLS != nil {
			clientURL.Scheme = "https"
			ecfg.ClientTLSInfo = transport.TLSInfo{
				CertFile:       cfg.ClientTLS.CertFile,
				KeyFile:        cfg.ClientTLS.KeyFile,
				TrustedCAFile:  cfg.ClientTLS.CAFile,
				ClientCertAuth: true,
			}
		}
		ecfg.ListenClientUrls = []url.URL{*clientURL}
		ecfg.AdvertiseClientUrls = []url.URL{*clientURL}
		closeToBrowsers(ecfg, clientURL.Hostname())
	}
	return ecfg, nil
}

// parseURL accepts "host:port" as well as a full URL, since that is how
// people write listen addresses on a command line.
func parseURL(what, raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("invalid etcd %s URL %q", what, raw)
	}
	return u, nil
}

// Client returns a client connected to this member. It is closed by Stop.
func (m *Member) Client() *clientv3.Client { return m.client }

// ClientURL is the URL the member's client listener actually serves on
// (a port of 0 in the configuration is resolved), or "" if it has none.
// A wildcard listener is named by its loopback address, which is what a
// client on this machine dials and what the serving certificate names.
func (m *Member) ClientURL() string {
	if len(m.etcd.Clients) == 0 {
		return ""
	}
	scheme := "http"
	if m.tls != nil {
		scheme = "https"
	}
	return scheme + "://" + dialable(m.etcd.Clients[0].Addr())
}

// EtcdctlFlags are the flags etcdctl needs to reach the member's client
// listener, with the certificate flags when it serves TLS; none if it has
// no listener.
func (m *Member) EtcdctlFlags() []string {
	u := m.ClientURL()
	if u == "" {
		return nil
	}
	if m.tls == nil {
		return []string{"--endpoints=" + u}
	}
	return []string{"--endpoints=" + u, "--cacert=" + m.tls.CAFile, "--cert=" + m.tls.AdminCertFile, "--key=" + m.tls.AdminKeyFile}
}

// Err reports a fatal error of the running member.
func (m *Member) Err() <-chan error { return m.etcd.Err() }

// Ready reports whether the member can serve a linearizable read right now.
func (m *Member) Ready(ctx context.Context) error {
	_, err := m.client.Get(ctx, "health")
	return err
}

// Stop closes the client and stops the member, flushing what it has
// written. Calling it again does nothing.
func (m *Member) Stop() {
	m.stopOnce.Do(func() {
		m.stopping.Store(true)
		if m.client != nil {
			m.client.Close()
		}
		m.etcd.Close()
	})
}

// Crash stops the member as a crash would, for fault tests: raft stops at
// once, so a leader hands nothing over and the others must notice it is
// gone and elect another (Stop, like a clean shutdown, transfers the
// leadership first). The listeners are then closed as Stop closes them.
func (m *Member) Crash() {
	m.stopOnce.Do(func() {
		m.stopping.Store(true)
		m.etcd.Server.HardStop()
		if m.client != nil {
			m.client.Close()
		}
		m.etcd.Close()
	})
}

// errorLogger logs etcd's errors to stderr until the member is stopping;
// then etcd reports its closed listeners as errors, which would only alarm.
func errorLogger(stopping *atomic.Bool) *zap.Logger {
	enabled := zap.LevelEnablerFunc(func(l zapcore.Level) bool {
		return l >= zapcore.ErrorLevel && !stopping.Load()
	})
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), enabled))
}
