// Package pki is kubelab's certificate authority for its HTTPS port.
// kubectl sends a bearer token only over TLS, so classroom mode serves the
// API over HTTPS as well, with serving certificates signed by a CA that
// kubelab makes once and keeps in etcd: every replica sharing that etcd
// serves under the same CA, and every downloaded kubeconfig trusts it.
package pki

import (
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
	"math/big"
	"net"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CAKey is where the CA's certificate and key live in etcd.
const CAKey = "/kubelab/pki/ca"

// maxCached bounds the serving certificates kept, one per host name asked
// for, so a client inventing names cannot grow memory.
const maxCached = 256

// Authority signs serving certificates for whatever name a client dials.
type Authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey

	mu     sync.Mutex
	served map[string]*tls.Certificate
}

type stored struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Load reads the CA from etcd, making it first if no replica has.
func Load(ctx context.Context, client *clientv3.Client) (*Authority, error) {
	resp, err := client.Get(ctx, CAKey)
	if err != nil {
		return nil, fmt.Errorf("reading the CA: %w", err)
	}
	if len(resp.Kvs) == 0 {
		data, err := newCA()
		if err != nil {
			return nil, err
		}
		// Create-only: if another replica made one first, use theirs.
		if _, err := client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(CAKey), "=", 0)).
			Then(clientv3.OpPut(CAKey, string(data))).
			Commit(); err != nil {
			return nil, fmt.Errorf("storing the CA: %w", err)
		}
		if resp, err = client.Get(ctx, CAKey); err != nil || len(resp.Kvs) == 0 {
			return nil, fmt.Errorf("reading the CA back: %v", err)
		}
	}
	return parse(resp.Kvs[0].Value)
}

func newCA() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kubelab-ca", Organization: []string{"kubelab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return json.Marshal(stored{
		Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Key:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
	})
}

func parse(data []byte) (*Authority, error) {
	var s stored
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the CA in etcd is corrupt: %w", err)
	}
	certBlock, _ := pem.Decode([]byte(s.Cert))
	keyBlock, _ := pem.Decode([]byte(s.Key))
	if certBlock == nil || keyBlock == nil {
		return nil, errors.New("the CA in etcd is corrupt: no PEM blocks")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the CA in etcd is corrupt: %w", err)
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the CA's key in etcd is corrupt: %w", err)
	}
	return &Authority{cert: cert, certPEM: []byte(s.Cert), key: key, served: map[string]*tls.Certificate{}}, nil
}

// CertPEM is the CA certificate, for a kubeconfig's certificate-authority-data.
func (a *Authority) CertPEM() []byte { return a.certPEM }

// TLSConfig serves a certificate for the name each client dials: the SNI
// host name, or for a client dialling an IP address (which sends no SNI)
// the address it reached.
func (a *Authority) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: a.certificateFor}
}

func (a *Authority) certificateFor(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if name == "" && hello.Conn != nil {
		if host, _, err := net.SplitHostPort(hello.Conn.LocalAddr().String()); err == nil {
			name = host
		}
	}
	if name == "" {
		name = "localhost"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.served[name]; ok && time.Until(c.Leaf.NotAfter) > 24*time.Hour {
		return c, nil
	}
	c, err := a.sign(name)
	if err != nil {
		return nil, err
	}
	if len(a.served) >= maxCached {
		clear(a.served)
	}
	a.served[name] = c
	return c, nil
}

// sign makes a serving certificate for name (a host name or an IP), valid
// for loopback too.
func (a *Authority) sign(name string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if name != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, name)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
