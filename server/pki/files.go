package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Files serves a certificate that the instructor brings (--tls-cert-file
// and --tls-key-file), say one that students' browsers already trust, in
// place of kubelab's own CA: then no student imports anything, and no CA
// key is kept in etcd.
type Files struct {
	cert   tls.Certificate
	anchor []byte
}

// LoadFiles reads a certificate chain, leaf first, and its key, as
// kube-apiserver's --tls-cert-file and --tls-private-key-file do.
func LoadFiles(certFile, keyFile string) (*Files, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file and --tls-key-file: %w", err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("--tls-cert-file: %w", err)
		}
	}
	if time.Now().After(cert.Leaf.NotAfter) {
		return nil, fmt.Errorf("--tls-cert-file: the certificate expired on %s", cert.Leaf.NotAfter.UTC().Format(time.DateOnly))
	}
	if !slices.Contains(cert.Leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && len(cert.Leaf.ExtKeyUsage) > 0 {
		return nil, fmt.Errorf("--tls-cert-file: the certificate is not for serving websites (no serverAuth usage)")
	}
	// kubeconfigs trust the chain's last certificate: the issuer the file
	// names, or the certificate itself. kubectl then verifies as a
	// browser does, whether or not the system knows that issuer.
	last := cert.Certificate[len(cert.Certificate)-1]
	return &Files{cert: cert, anchor: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: last})}, nil
}

// CertPEM is what kubeconfigs trust: the chain's last certificate.
func (f *Files) CertPEM() []byte { return f.anchor }

// TLSConfig serves the certificate whatever name the client dials.
func (f *Files) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{f.cert}}
}

// Describe says, for the start-up banner, what the certificate is for.
func (f *Files) Describe() string {
	names := append([]string(nil), f.cert.Leaf.DNSNames...)
	for _, ip := range f.cert.Leaf.IPAddresses {
		names = append(names, ip.String())
	}
	return fmt.Sprintf("the certificate of --tls-cert-file, for %s, valid until %s", strings.Join(names, ", "), f.cert.Leaf.NotAfter.UTC().Format(time.DateOnly))
}
