package embedetcd

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestLonePeerPortIsTLS: a member alone gets a peer port etcd insists on,
// behind TLS, so nothing but a TLS client talks to it; plain HTTP (what a
// page reaching it through DNS rebinding would send) gets no answer.
func TestLonePeerPortIsTLS(t *testing.T) {
	m, err := Start(Config{DataDir: t.TempDir(), UnsafeNoFsync: true, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	addr := m.etcd.Peers[0].Listener.Addr().String()
	client := &http.Client{Timeout: 3 * time.Second}
	if resp, err := client.Get("http://" + addr + "/members"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("the peer port answered plain HTTP: %s", resp.Status)
		}
	}
	if _, err := client.Get("https://" + addr + "/members"); err == nil {
		t.Fatal("the peer port's self-signed certificate was trusted")
	}
}

// TestLonePeerPortSurvivesRestartFromPlainHTTP: a data dir whose member
// was made with a plain-HTTP peer port (as kubelab made them before)
// starts again with the TLS one and keeps its data.
func TestLonePeerPortSurvivesRestartFromPlainHTTP(t *testing.T) {
	dir := t.TempDir()
	old, err := Start(Config{DataDir: dir, PeerURL: "http://127.0.0.1:0", UnsafeNoFsync: true, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := old.Client().Put(ctx, "/registry/kept", "yes"); err != nil {
		t.Fatal(err)
	}
	old.Stop()
	m, err := Start(Config{DataDir: dir, UnsafeNoFsync: true, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("restart with a TLS peer port: %v", err)
	}
	defer m.Stop()
	resp, err := m.Client().Get(ctx, "/registry/kept")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after the restart: %v, %d keys", err, len(resp.Kvs))
	}
}

// TestEtcdConfig: the knobs behind the client port's behaviour. etcd
// reads an empty CORS list or host list as "allow all", so both must hold
// entries, and no browser Origin ("null" or scheme://host[:port]) may be
// among the CORS ones.
func TestEtcdConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"loopback, plain": {DataDir: t.TempDir(), ClientURL: "127.0.0.2:2379"},
		"wildcard, TLS": {DataDir: t.TempDir(), ClientURL: "0.0.0.0:2379", ClientTLS: &ClientTLS{
			CAFile: "ca.crt", CertFile: "server.crt", KeyFile: "server.key"}},
		"no client port": {DataDir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			ecfg, err := etcdConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if ecfg.EnableGRPCGateway {
				t.Error("the JSON gateway is on")
			}
			if len(ecfg.CORS) == 0 {
				t.Error("the CORS list is empty, which etcd reads as allow all")
			}
			for origin := range ecfg.CORS {
				if origin == "*" || origin == "null" || strings.Contains(origin, "://") {
					t.Errorf("CORS allows %q", origin)
				}
			}
			if _, all := ecfg.HostWhitelist["*"]; all || len(ecfg.HostWhitelist) == 0 {
				t.Errorf("host list %v allows every host", ecfg.HostWhitelist)
			}
			for host := range ecfg.HostWhitelist {
				if !isLoopbackName(host) {
					t.Errorf("host list allows %q", host)
				}
			}
			if tls := cfg.ClientTLS != nil; tls != ecfg.ClientTLSInfo.ClientCertAuth || tls && ecfg.ListenClientUrls[0].Scheme != "https" {
				t.Errorf("TLS asked %v: client cert auth %v, listen URLs %v", tls, ecfg.ClientTLSInfo.ClientCertAuth, ecfg.ListenClientUrls)
			}
		})
	}
	ecfg, _ := etcdConfig(Config{DataDir: t.TempDir(), ClientURL: "127.0.0.2:2379"})
	if _, ok := ecfg.HostWhitelist["127.0.0.2"]; !ok {
		t.Errorf("host list %v lacks the listen address 127.0.0.2", ecfg.HostWhitelist)
	}
}

func isLoopbackName(h string) bool {
	if h == "localhost" || h == "[::1]" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
