package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/pki"
)

// TestTransportTheInstructorsCertificate: with --tls-cert-file, the class
// is served with the instructor's certificate, a student's downloaded
// kubeconfig trusts its issuer and works, and kubelab keeps no CA key in
// etcd for anyone to take.
func TestTransportTheInstructorsCertificate(t *testing.T) {
	t.Parallel()
	certFile, keyFile, issuer := instructorsChain(t)
	lab := classroomLab(t, func(c *server.Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile })

	s := join(t, lab, "Pia")
	if _, err := s.clientset(t).CoreV1().Pods(s.name).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("the student's kubeconfig against the instructor's certificate: %v", err)
	}
	kc, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "certificate-authority-data") {
		t.Fatal("the kubeconfig trusts no certificate")
	}

	conn, err := tls.Dial("tcp", strings.TrimPrefix(lab.SecureURL(), "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates
	conn.Close()
	if len(served) == 0 || served[0].Issuer.CommonName != issuer.Subject.CommonName {
		t.Fatalf("HTTPS serves a certificate issued by %q, want the instructor's %q", served[0].Issuer.CommonName, issuer.Subject.CommonName)
	}
	resp, err := lab.EtcdClient().Get(context.Background(), pki.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatal("kubelab made a CA of its own and keeps its key in etcd")
	}
}

// instructorsChain writes a certificate for 127.0.0.1 and localhost,
// issued by a CA of the school's, as files an instructor brings.
func instructorsChain(t *testing.T) (certFile, keyFile string, issuer *x509.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "school CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	issuer, _ = x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "lab"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(0, 3, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, issuer, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, chain, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, issuer
}
