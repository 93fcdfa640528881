package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeChain writes a leaf for host, issued by a CA of its own, as the
// files an instructor brings: the chain (leaf first, then the CA if
// withIssuer) and the leaf's key. It returns the CA's PEM.
func writeChain(t *testing.T, host string, notAfter time.Time, withIssuer bool) (certFile, keyFile string, caPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "school CA"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	chain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if withIssuer {
		chain = append(chain, caPEM...)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, chain, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, caPEM
}

func TestTheInstructorsCertificateIsServedAndTrusted(t *testing.T) {
	for _, withIssuer := range []bool{true, false} {
		certFile, keyFile, caPEM := writeChain(t, "lab.school.example", time.Now().AddDate(0, 3, 0), withIssuer)
		f, err := LoadFiles(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if withIssuer && string(f.CertPEM()) != string(caPEM) {
			t.Fatal("with the issuer in the file, kubeconfigs do not trust the issuer")
		}
		ln, err := tls.Listen("tcp", "127.0.0.1:0", f.TLSConfig())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.(*tls.Conn).Handshake()
				c.Close()
			}
		}()
		// As kubectl with a downloaded kubeconfig: only CertPEM trusted.
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(f.CertPEM())
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "lab.school.example"})
		ln.Close()
		if err != nil {
			t.Fatalf("issuer in the file %v: %v", withIssuer, err)
		}
		conn.Close()
		if !strings.Contains(f.Describe(), "lab.school.example") {
			t.Fatalf("Describe() = %q, want the certificate's name", f.Describe())
		}
	}
}

func TestTheInstructorsFilesAreChecked(t *testing.T) {
	expired, expiredKey, _ := writeChain(t, "lab.school.example", time.Now().Add(-time.Minute), true)
	good, _, _ := writeChain(t, "lab.school.example", time.Now().AddDate(0, 3, 0), true)
	_, otherKey, _ := writeChain(t, "lab.school.example", time.Now().AddDate(0, 3, 0), true)
	for name, tc := range map[string]struct{ cert, key, want string }{
		"expired":     {expired, expiredKey, "expired"},
		"another key": {good, otherKey, "private key does not match"},
		"no file":     {filepath.Join(t.TempDir(), "none.crt"), otherKey, "no such file"},
	} {
		if _, err := LoadFiles(tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--tls-cert-file") {
			t.Errorf("%s: %v, want an error naming --tls-cert-file that says %q", name, err, tc.want)
		}
	}
}
