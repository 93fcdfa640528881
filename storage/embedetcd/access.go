package embedetcd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"go.etcd.io/etcd/server/v3/embed"
)

// noBrowserOrigin is the only CORS origin the member allows. etcd reads an
// empty CORS list as "allow every origin", so the list cannot be empty; a
// browser's Origin header is always "null" or scheme://host[:port], which
// this string, with its spaces and no scheme, can never be. So no web page
// is ever allowed to read what the member answers.
const noBrowserOrigin = "no browser origin is allowed"

// closeToBrowsers sets the member's HTTP access control so that no web page
// a user opens can use it: etcd's defaults allow any origin (CORS *), any
// Host (which DNS rebinding exploits: a page at attacker.example whose
// name then resolves to 127.0.0.1 is same-origin with the member) and a
// JSON gateway that a plain fetch can write through. etcdctl and kubelab
// speak gRPC, which needs none of it.
func closeToBrowsers(ecfg *embed.Config, listenHost string) {
	ecfg.EnableGRPCGateway = false
	ecfg.CORS = map[string]struct{}{noBrowserOrigin: {}}
	ecfg.HostWhitelist = loopbackHosts(listenHost)
}

// loopbackHosts are the Host names a plain-HTTP request may carry: the
// loopback names, and the listen address if it is a loopback address of
// its own (127.0.0.2). etcd compares the Host without its port, and an
// IPv6 Host without a port keeps its brackets.
func loopbackHosts(listenHost string) map[string]struct{} {
	hosts := map[string]struct{}{"localhost": {}, "127.0.0.1": {}, "::1": {}, "[::1]": {}}
	if ip := net.ParseIP(listenHost); ip != nil && ip.IsLoopback() {
		hosts[listenHost] = struct{}{}
	}
	return hosts
}

// dialable names a listener's address as a client on this machine dials
// it: a wildcard address becomes the loopback one.
func dialable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	loopback := net.IPv4(127, 0, 0, 1)
	if tcp.IP.To4() == nil {
		loopback = net.IPv6loopback
	}
	return net.JoinHostPort(loopback.String(), fmt.Sprint(tcp.Port))
}

// clientConfig is the TLS a client of the member presents: the admin
// certificate, trusting only the etcd CA.
func (c *ClientTLS) clientConfig() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(c.AdminCertFile, c.AdminKeyFile)
	if err != nil {
		return nil, fmt.Errorf("etcd admin certificate: %w", err)
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("etcd CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("etcd CA %s holds no certificate", c.CAFile)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
