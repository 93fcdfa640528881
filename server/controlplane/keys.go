package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// serviceAccountKey returns the path of the key that signs and verifies
// service-account tokens, made at first start (ECDSA P-256, which kube
// accepts for both) and kept, so that tokens outlive a restart.
func serviceAccountKey(path string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("kube core: service-account key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("kube core: service-account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", fmt.Errorf("kube core: service-account key: %w", err)
	}
	// Written whole under another name, then renamed: a crash leaves no
	// half key that the next start would trust.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", fmt.Errorf("kube core: service-account key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("kube core: service-account key: %w", err)
	}
	return path, nil
}

// servingCA writes to caFile the CA certificates of certFile, kube-apiserver's
// self-signed serving certificate followed by the CA it made to sign it:
// the root CA that every namespace's kube-root-ca.crt carries must be the
// CA alone (a serving certificate there is refused as a trust bundle).
func servingCA(certFile, caFile string) error {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("kube core: serving certificate: %w", err)
	}
	var cas []byte
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Errorf("kube core: serving certificate: %w", err)
		}
		if cert.IsCA {
			cas = append(cas, pem.EncodeToMemory(block)...)
		}
	}
	if len(cas) == 0 {
		return fmt.Errorf("kube core: %s holds no CA certificate", certFile)
	}
	tmp := caFile + ".new"
	if err := os.WriteFile(tmp, cas, 0o644); err != nil {
		return fmt.Errorf("kube core: serving CA: %w", err)
	}
	if err := os.Rename(tmp, caFile); err != nil {
		return fmt.Errorf("kube core: serving CA: %w", err)
	}
	return nil
}
