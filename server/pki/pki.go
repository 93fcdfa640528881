// Package pki is what classroom mode's HTTPS port serves with. kubectl
// sends a bearer token only over TLS, so a class serves the API over HTTPS
// as well, with serving certificates signed by a CA that kubelab keeps in
// etcd: every replica sharing that etcd serves under the same CA, and every
// downloaded kubeconfig trusts it. Students import that CA into their
// browsers, so it is name-constrained to the class's own hosts and
// short-lived: its key, in a backup, can intercept nothing else. Or the
// instructor brings a certificate of their own (Files).
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

// DefaultValidity is how long a CA kubelab makes is valid: a term's
// course. MaxValidity is the most --ca-validity may ask for. Students
// import the CA into their browsers, so its key could intercept their
// HTTPS until it expires; a short life bounds that, and the name
// constraints bound where.
const (
	DefaultValidity = 120 * 24 * time.Hour
	MaxValidity     = 398 * 24 * time.Hour
)

// renewBefore is how long before the CA expires that kubelab replaces it:
// the serving certificates it signs must end with it, and a day is what
// certificateFor keeps them for.
const renewBefore = 24 * time.Hour

// Options say what kubelab's CA may sign for, and for how long.
type Options struct {
	// Hosts are the names and addresses, besides localhost and the
	// private address ranges, that students reach the class at
	// (--tls-san). The CA may sign for these and nothing else.
	Hosts []string
	// Validity is how long a new CA is valid; 0 is DefaultValidity.
	Validity time.Duration
}

// privateRanges are the addresses a CA may sign for without being asked:
// loopback, RFC 1918, shared (CGNAT), link-local and unique local. A
// classroom reaches its instructor's machine at one of them, and no public
// site is served at one.
var privateRanges = []string{
	"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
	"::1/128", "fc00::/7", "fe80::/10",
}

// Authority signs serving certificates for the names a client dials, as
// far as its CA's name constraints allow.
type Authority struct {
	client *clientv3.Client
	opts   Options
	log    func(format string, args ...any)

	mu      sync.Mutex
	ca      *ca
	served  map[string]*tls.Certificate
	refused map[string]bool
}

// ca is one CA certificate and its key, and its etcd revision, which a
// renewal compares against so that replicas replace it once.
type ca struct {
	cert     *x509.Certificate
	certPEM  []byte
	key      *ecdsa.PrivateKey
	revision int64
}

type stored struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Load reads the CA from etcd, making it first if no replica has, or
// replacing it if it would not do: one with no name constraints (kubelab
// made such CAs before), one that may not sign for every host in opts, one
// that lives longer than MaxValidity, or one about to expire. Students
// must then import the new CA; log says so.
func Load(ctx context.Context, client *clientv3.Client, opts Options, log func(format string, args ...any)) (*Authority, error) {
	if opts.Validity == 0 {
		opts.Validity = DefaultValidity
	}
	if opts.Validity < 2*renewBefore {
		return nil, fmt.Errorf("a CA valid for %s would be replaced as soon as it is made: give at least %s", opts.Validity, 2*renewBefore)
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	a := &Authority{client: client, opts: opts, log: log, served: map[string]*tls.Certificate{}, refused: map[string]bool{}}
	c, err := a.current(ctx)
	if err != nil {
		return nil, err
	}
	a.ca = c
	return a, nil
}

// current reads the CA from etcd and replaces it if it would not do.
func (a *Authority) current(ctx context.Context) (*ca, error) {
	for range 3 {
		resp, err := a.client.Get(ctx, CAKey)
		if err != nil {
			return nil, fmt.Errorf("reading the CA: %w", err)
		}
		var (
			old *ca
			why string
		)
		if len(resp.Kvs) > 0 {
			if old, err = parse(resp.Kvs[0].Value, resp.Kvs[0].ModRevision); err != nil {
				return nil, err
			}
			if why = a.unfit(old.cert); why == "" {
				return old, nil
			}
		}
		data, err := newCA(a.opts)
		if err != nil {
			return nil, err
		}
		// Only if no replica replaced it first; if one did, use theirs
		// (the next round reads and checks it).
		rev := int64(0)
		if old != nil {
			rev = old.revision
		}
		put, err := a.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(CAKey), "=", rev)).
			Then(clientv3.OpPut(CAKey, string(data))).
			Commit()
		if err != nil {
			return nil, fmt.Errorf("storing the CA: %w", err)
		}
		if put.Succeeded && old != nil {
			a.log("kubelab's CA was replaced (%s): students must download their kubeconfig again, and import the new CA in place of the old one", why)
		}
	}
	return nil, errors.New("storing the CA: other replicas kept replacing it; are they started with different --tls-san or --ca-validity?")
}

// unfit says why a CA would not do, or "" if it does.
func (a *Authority) unfit(c *x509.Certificate) string {
	switch {
	case !c.PermittedDNSDomainsCritical || len(c.PermittedDNSDomains) == 0:
		return "it had no name constraints, so its key could sign for any website"
	case c.NotAfter.Sub(c.NotBefore) > MaxValidity+2*time.Hour:
		return fmt.Sprintf("it was valid for %d days, past the most of %d", int(c.NotAfter.Sub(c.NotBefore).Hours()/24), int(MaxValidity.Hours()/24))
	case time.Until(c.NotAfter) < renewBefore:
		return "it expires on " + c.NotAfter.UTC().Format(time.DateOnly)
	}
	for _, h := range a.opts.Hosts {
		if !permits(c, h) {
			return "it may not sign for " + h + ", which --tls-san names"
		}
	}
	return ""
}

// permits says whether c's name constraints let it sign for host, as a
// browser checks them: a DNS name within a permitted domain, or an
// address within a permitted range.
func permits(c *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		for _, r := range c.PermittedIPRanges {
			if r.Contains(ip) {
				return true
			}
		}
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range c.PermittedDNSDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

func newCA(opts Options) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "kubelab-ca " + now.UTC().Format(time.DateOnly), Organization: []string{"kubelab"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(opts.Validity),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         []string{"localhost"},
	}
	for _, r := range privateRanges {
		_, n, _ := net.ParseCIDR(r)
		tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, n)
	}
	for _, h := range opts.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			bits := 8 * len(ip.To16())
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
		} else {
			tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, strings.ToLower(strings.TrimSuffix(h, ".")))
		}
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

func parse(data []byte, revision int64) (*ca, error) {
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
	return &ca{cert: cert, certPEM: []byte(s.Cert), key: key, revision: revision}, nil
}

// CertPEM is the CA certificate, for a kubeconfig's certificate-authority-data.
func (a *Authority) CertPEM() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ca.certPEM
}

// Describe says, for the start-up banner, what the CA may sign for and
// until when.
func (a *Authority) Describe() string {
	a.mu.Lock()
	c := a.ca.cert
	a.mu.Unlock()
	names := append([]string(nil), c.PermittedDNSDomains...)
	for _, r := range c.PermittedIPRanges {
		names = append(names, r.String())
	}
	return fmt.Sprintf("valid until %s, and only for %s", c.NotAfter.UTC().Format(time.DateOnly), strings.Join(names, ", "))
}

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
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Until(a.ca.cert.NotAfter) < renewBefore {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := a.current(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		a.ca = c
		clear(a.served)
	}
	if name == "" || !permits(a.ca.cert, name) {
		// A certificate for localhost alone: the client sees a name
		// mismatch it can read, and the instructor a line that says what
		// to do, once per name.
		if name != "" && !a.refused[name] && len(a.refused) < maxCached {
			a.refused[name] = true
			a.log("a client dialled %s, which kubelab's CA may not sign for: to serve the class there, restart kubelab with --tls-san=%s (students then import the new CA)", name, name)
		}
		name = "localhost"
	}
	if c, ok := a.served[name]; ok && time.Until(c.Leaf.NotAfter) > renewBefore {
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
// for loopback too, and for no longer than the CA.
func (a *Authority) sign(name string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.AddDate(1, 0, 0)
	if a.ca.cert.NotAfter.Before(notAfter) {
		notAfter = a.ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.ca.cert, &key.PublicKey, a.ca.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, a.ca.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
