package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/certtest"
)

func TestTheInstructorsCertificateIsServedAndTrusted(t *testing.T) {
	for _, withIssuer := range []bool{true, false} {
		certFile, keyFile, issuer := certtest.Files(t, time.Now().AddDate(0, 3, 0), withIssuer, "lab.school.example")
		caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: issuer.Raw})
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
	expired, expiredKey, _ := certtest.Files(t, time.Now().Add(-time.Minute), true, "lab.school.example")
	good, _, _ := certtest.Files(t, time.Now().AddDate(0, 3, 0), true, "lab.school.example")
	_, otherKey, _ := certtest.Files(t, time.Now().AddDate(0, 3, 0), true, "lab.school.example")
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
