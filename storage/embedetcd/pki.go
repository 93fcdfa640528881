package embedetcd

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ClientTLS makes the member's client listener serve TLS only and require
// a client certificate signed by CAFile, as kubeadm runs etcd.
type ClientTLS struct {
	// CAFile is the etcd CA: it signs the server's certificate, and every
	// client must present a certificate it signed.
	CAFile string
	// CertFile and KeyFile are the member's serving certificate.
	CertFile, KeyFile string
	// AdminCertFile and AdminKeyFile are a client certificate for the
	// instructor's etcdctl and for the member's own client.
	AdminCertFile, AdminKeyFile string
}

// The files WritePKI keeps in its directory, named as kubeadm names
// /etc/kubernetes/pki/etcd's.
const (
	caCertFile    = "ca.crt"
	caKeyFile     = "ca.key"
	serverCrtFile = "server.crt"
	serverKeyFile = "server.key"
	adminCrtFile  = "admin.crt"
	adminKeyFile  = "admin.key"
)

const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	// renewBefore: a certificate this close to its end is made again.
	renewBefore = 30 * 24 * time.Hour
)

// WritePKI makes sure dir holds an etcd CA, a serving certificate valid for
// host (and every loopback name) and an admin client certificate, and
// returns their paths. The CA lives in files, not in etcd, because etcd
// needs it before it can start. What is already there and still good is
// kept, so etcdctl commands keep working across restarts; a serving
// certificate that does not name host is made again under the same CA.
func WritePKI(dir, host string) (ClientTLS, error) {
	files := ClientTLS{
		CAFile:        filepath.Join(dir, caCertFile),
		CertFile:      filepath.Join(dir, serverCrtFile),
		KeyFile:       filepath.Join(dir, serverKeyFile),
		AdminCertFile: filepath.Join(dir, adminCrtFile),
		AdminKeyFile:  filepath.Join(dir, adminKeyFile),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, fmt.Errorf("etcd PKI: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return files, fmt.Errorf("etcd PKI: %w", err)
	}
	ca, caKey, err := loadPair(files.CAFile, filepath.Join(dir, caKeyFile))
	fresh := err != nil || !current(ca)
	if fresh {
		if ca, caKey, err = writeCA(dir); err != nil {
			return files, err
		}
	}
	names := servingNames(host)
	if cert, _, err := loadPair(files.CertFile, files.KeyFile); fresh || err != nil || !current(cert) || !signedBy(cert, ca) || !covers(cert, names) {
		tmpl := leafTemplate("kubelab-etcd", x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames, tmpl.IPAddresses = names.dns, names.ips
		if err := writeLeaf(files.CertFile, files.KeyFile, tmpl, ca, caKey); err != nil {
			return files, err
		}
	}
	if cert, _, err := loadPair(files.AdminCertFile, files.AdminKeyFile); fresh || err != nil || !current(cert) || !signedBy(cert, ca) {
		tmpl := leafTemplate("kubelab-etcd-admin", x509.ExtKeyUsageClientAuth)
		if err := writeLeaf(files.AdminCertFile, files.AdminKeyFile, tmpl, ca, caKey); err != nil {
			return files, err
		}
	}
	return files, nil
}

type sans struct {
	dns []string
	ips []net.IP
}

// servingNames: every loopback name, since the member's own client and a
// local etcdctl dial those, plus host; a wildcard host adds the machine's
// name and addresses, which is what a client elsewhere would dial.
func servingNames(host string) sans {
	s := sans{dns: []string{"localhost"}, ips: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	add := func(h string) {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(s.ips, ip.Equal) {
				s.ips = append(s.ips, ip)
			}
		} else if h != "" && !slices.Contains(s.dns, h) {
			s.dns = append(s.dns, h)
		}
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		add(host)
		return s
	}
	if name, err := os.Hostname(); err == nil {
		add(name)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				add(n.IP.String())
			}
		}
	}
	return s
}

func covers(cert *x509.Certificate, want sans) bool {
	for _, d := range want.dns {
		if !slices.Contains(cert.DNSNames, d) {
			return false
		}
	}
	for _, ip := range want.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func current(cert *x509.Certificate) bool {
	return time.Now().Add(renewBefore).Before(cert.NotAfter)
}

func signedBy(cert, ca *x509.Certificate) bool {
	return bytes.Equal(cert.RawIssuer, ca.RawSubject) && cert.CheckSignatureFrom(ca) == nil
}

func writeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kubelab-etcd-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePair(filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile), der, key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func leafTemplate(cn string, usage x509.ExtKeyUsage) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func writeLeaf(certFile, keyFile string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("etcd PKI: signing %s: %w", tmpl.Subject.CommonName, err)
	}
	return writePair(certFile, keyFile, der, key)
}

// writePair writes both files 0600: the keys are the keys to etcd, and the
// certificates are nobody else's business either.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePrivate(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writePrivate(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// writePrivate replaces path through a temporary file, so a crash never
// leaves half a key, and sets 0600 even on a file that existed before.
func writePrivate(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("etcd PKI: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("etcd PKI: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("etcd PKI: %w", err)
	}
	return nil
}

func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, errors.New("not an ECDSA key")
	}
	return pair.Leaf, key, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) // crypto/rand never fails (Go 1.24+)
	return n
}
