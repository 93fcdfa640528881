package embedetcd

import (
	"context"
	"net/http"
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
