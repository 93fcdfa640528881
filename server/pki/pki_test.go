package pki

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"testing"

	"github.com/kubelab/kubelab/storage/storagetest"
)

func TestReplicasShareOneCAAndClientsTrustIt(t *testing.T) {
	ctx := context.Background()
	m := storagetest.StartEtcd(t)
	a, err := Load(ctx, m.Client())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(ctx, m.Client())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.CertPEM(), b.CertPEM()) {
		t.Fatal("a second replica made a CA of its own")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(tls.NewListener(ln, b.TLSConfig()))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(a.CertPEM())
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Get("https://" + net.JoinHostPort(host, port))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
	}
	// A name the client dials gets a certificate for that name.
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "lab.example.org"})
	if err != nil {
		t.Fatalf("dialling as lab.example.org: %v", err)
	}
	conn.Close()
}

func TestCorruptCAIsAnError(t *testing.T) {
	m := storagetest.StartEtcd(t)
	if _, err := m.Client().Put(context.Background(), CAKey, "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), m.Client()); err == nil {
		t.Fatal("Load accepted a corrupt CA")
	}
}
