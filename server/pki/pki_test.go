package pki

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/storage/storagetest"
)

// logged collects what an Authority logs.
type logged struct {
	mu    sync.Mutex
	lines []string
}

func (l *logged) log(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logged) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func load(t *testing.T, client *clientv3.Client, opts Options, l *logged) *Authority {
	t.Helper()
	var log func(string, ...any)
	if l != nil {
		log = l.log
	}
	a, err := Load(context.Background(), client, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// serve serves "ok" over TLS with a's certificates, on loopback.
func serve(t *testing.T, a *Authority) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(tls.NewListener(ln, a.TLSConfig()))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func pool(caPEM []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(caPEM)
	return p
}

func TestReplicasShareOneCAAndClientsTrustIt(t *testing.T) {
	m := storagetest.StartEtcd(t)
	opts := Options{Hosts: []string{"lab.example.org"}}
	a := load(t, m.Client(), opts, nil)
	b := load(t, m.Client(), opts, nil)
	if !bytes.Equal(a.CertPEM(), b.CertPEM()) {
		t.Fatal("a second replica made a CA of its own")
	}
	addr := serve(t, b)
	_, port, _ := net.SplitHostPort(addr)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(a.CertPEM())}}}
		resp, err := c.Get("https://" + net.JoinHostPort(host, port))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
	}
	// A name of the class's, dialled, gets a certificate for that name.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool(a.CertPEM()), ServerName: "lab.example.org"})
	if err != nil {
		t.Fatalf("dialling as lab.example.org: %v", err)
	}
	conn.Close()
}

// TestTheCAsKeySignsForNoOtherSite acts as whoever later gets a copy of
// etcd: they take the CA's key from /kubelab/pki/ca and sign certificates
// for other sites. A student's browser that trusts kubelab's CA must take
// none of them, as Go's verifier (which checks name constraints as
// browsers do) shows.
func TestTheCAsKeySignsForNoOtherSite(t *testing.T) {
	m := storagetest.StartEtcd(t)
	a := load(t, m.Client(), Options{Hosts: []string{"lab.example.org", "203.0.113.7"}}, nil)
	resp, err := m.Client().Get(context.Background(), CAKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the CA as a backup's holder would: %v", err)
	}
	stolen, err := parse(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	if life := stolen.cert.NotAfter.Sub(stolen.cert.NotBefore); life > DefaultValidity+2*time.Hour {
		t.Errorf("the CA is valid for %s, want at most %s", life, DefaultValidity)
	}
	roots := pool(a.CertPEM())
	verify := func(leaf *x509.Certificate, intermediates ...*x509.Certificate) error {
		inter := x509.NewCertPool()
		for _, c := range intermediates {
			inter.AddCert(c)
		}
		name := leaf.Subject.CommonName
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: name})
		return err
	}

	for _, name := range []string{"localhost", "lab.example.org", "192.168.1.20", "10.0.0.5", "203.0.113.7", "127.0.0.1", "fd00::1"} {
		if err := verify(signLeaf(t, stolen.cert, stolen.key, name)); err != nil {
			t.Errorf("%s, one of the class's hosts: %v", name, err)
		}
	}
	foreign := []string{"www.google.com", "bank.example.com", "lab.example.org.evil.example", "example.org", "8.8.8.8", "203.0.113.8", "2001:db8::1"}
	for _, name := range foreign {
		err := verify(signLeaf(t, stolen.cert, stolen.key, name))
		var invalid x509.CertificateInvalidError
		if !errors.As(err, &invalid) || invalid.Reason != x509.CANotAuthorizedForThisName {
			t.Errorf("a certificate for %s signed with the CA's key: %v, want refused for the name", name, err)
		}
	}
	// Nor through an intermediate CA of the holder's own, with no
	// constraints: the CA may sign no CA.
	inter, interKey := signIntermediate(t, stolen.cert, stolen.key)
	if err := verify(signLeaf(t, inter, interKey, "www.google.com"), inter); err == nil {
		t.Error("an intermediate CA signed with the CA's key made www.google.com trusted")
	}
	t.Logf("%d of %d other sites' certificates refused; the CA lives %d days", len(foreign), len(foreign), int(stolen.cert.NotAfter.Sub(stolen.cert.NotBefore).Hours()/24))
}

func signLeaf(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, name string) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func signIntermediate(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "mine"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

// storeCA puts a CA made from tmpl into etcd, as an older kubelab or
// another configuration left it.
func storeCA(t *testing.T, client *clientv3.Client, tmpl *x509.Certificate) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	data, _ := json.Marshal(stored{Cert: string(certPEM), Key: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))})
	if _, err := client.Put(context.Background(), CAKey, string(data)); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// legacyCA is what kubelab made before: valid for ten years, for any name.
func legacyCA() *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "kubelab-ca", Organization: []string{"kubelab"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
}

func TestACAThatWouldNotDoIsReplacedOnce(t *testing.T) {
	soon := legacyCA()
	soon.NotAfter = time.Now().Add(2 * time.Hour)
	soon.PermittedDNSDomainsCritical, soon.PermittedDNSDomains = true, []string{"localhost"}
	cases := map[string]struct {
		old  *x509.Certificate
		opts Options
		why  string
	}{
		"ten years, any name":       {legacyCA(), Options{}, "no name constraints"},
		"expires within a day":      {soon, Options{}, "expires on"},
		"not for a host now served": {nil, Options{Hosts: []string{"lab.example.org"}}, "may not sign for lab.example.org"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := storagetest.StartEtcd(t)
			var oldPEM []byte
			if tc.old != nil {
				oldPEM = storeCA(t, m.Client(), tc.old)
			} else {
				oldPEM = load(t, m.Client(), Options{}, nil).CertPEM()
			}
			var l logged
			a := load(t, m.Client(), tc.opts, &l)
			if bytes.Equal(a.CertPEM(), oldPEM) {
				t.Fatal("the CA was kept")
			}
			if lines := l.all(); len(lines) != 1 || !strings.Contains(lines[0], tc.why) || !strings.Contains(lines[0], "import the new CA") {
				t.Fatalf("logged %q, want one line that says %q and what students do", lines, tc.why)
			}
			// The new one does, so the next start keeps it.
			var again logged
			if b := load(t, m.Client(), tc.opts, &again); !bytes.Equal(b.CertPEM(), a.CertPEM()) || len(again.all()) != 0 {
				t.Fatalf("the next start replaced the new CA too (logged %q)", again.all())
			}
		})
	}
}

func TestReplicasReplacingAtOnceAgreeOnOneCA(t *testing.T) {
	m := storagetest.StartEtcd(t)
	storeCA(t, m.Client(), legacyCA())
	const replicas = 6
	got := make([][]byte, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { got[i] = load(t, m.Client(), Options{}, nil).CertPEM() })
	}
	wg.Wait()
	for i := 1; i < replicas; i++ {
		if !bytes.Equal(got[i], got[0]) {
			t.Fatalf("replica %d serves another CA than replica 0", i)
		}
	}
}

// TestANameTheCAMayNotSignForGetsLocalhostAndOneLogLine: a client that
// dials kubelab by a name outside the CA's constraints gets a certificate
// for localhost (a name mismatch the browser explains), never one the CA
// may not sign, and the instructor is told once what to do.
func TestANameTheCAMayNotSignForGetsLocalhostAndOneLogLine(t *testing.T) {
	m := storagetest.StartEtcd(t)
	var l logged
	a := load(t, m.Client(), Options{}, &l)
	addr := serve(t, a)
	for range 3 {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool(a.CertPEM()), ServerName: "lab.example.org"})
		if err == nil {
			conn.Close()
			t.Fatal("a client dialling lab.example.org was served a certificate for it")
		}
		var hostErr x509.HostnameError
		if !errors.As(err, &hostErr) || !slices.Equal(hostErr.Certificate.DNSNames, []string{"localhost"}) {
			t.Fatalf("dialling lab.example.org: %v, want a name mismatch on a certificate for localhost", err)
		}
	}
	if lines := l.all(); len(lines) != 1 || !strings.Contains(lines[0], "--tls-san=lab.example.org") {
		t.Fatalf("logged %q, want one line naming --tls-san=lab.example.org", lines)
	}
}

// TestACAAboutToExpireIsRenewedWhileServing: a server that runs into its
// CA's last day replaces it at the next handshake, in etcd too, rather than
// serving certificates that expire with it.
func TestACAAboutToExpireIsRenewedWhileServing(t *testing.T) {
	m := storagetest.StartEtcd(t)
	a := load(t, m.Client(), Options{}, nil)
	soon := legacyCA()
	soon.NotAfter = time.Now().Add(2 * time.Hour)
	soon.PermittedDNSDomainsCritical, soon.PermittedDNSDomains = true, []string{"localhost"}
	storeCA(t, m.Client(), soon)
	resp, err := m.Client().Get(context.Background(), CAKey)
	if err != nil {
		t.Fatal(err)
	}
	old, err := parse(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.ca = old
	a.mu.Unlock()

	conn, err := tls.Dial("tcp", serve(t, a), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	chain := conn.ConnectionState().PeerCertificates
	if issuer := chain[len(chain)-1]; time.Until(issuer.NotAfter) < 30*24*time.Hour {
		t.Fatalf("served under a CA that expires %s", issuer.NotAfter)
	}
	if bytes.Equal(a.CertPEM(), old.certPEM) {
		t.Fatal("CertPEM still gives the expiring CA")
	}
	if stored := load(t, m.Client(), Options{}, nil); !bytes.Equal(stored.CertPEM(), a.CertPEM()) {
		t.Fatal("the renewed CA is not the one in etcd")
	}
}

func TestCorruptCAIsAnError(t *testing.T) {
	m := storagetest.StartEtcd(t)
	if _, err := m.Client().Put(context.Background(), CAKey, "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), m.Client(), Options{}, nil); err == nil {
		t.Fatal("Load accepted a corrupt CA")
	}
}
