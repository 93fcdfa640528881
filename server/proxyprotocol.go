package server

import (
	"fmt"
	"net"
	"time"

	"github.com/pires/go-proxyproto"
)

// proxyHeaderTimeout bounds how long a connection may take to send its
// PROXY header: a proxy sends it at once.
const proxyHeaderTimeout = 5 * time.Second

// proxied makes ln read the PROXY protocol header (v1 or v2) that a proxy
// among trusted (addresses or CIDR ranges) sends ahead of each connection.
// Behind a proxy every connection comes from the proxy, so without it the
// limits per client address (sign-ins, anonymous requests) and the
// redirect of network clients to HTTPS would see one client, the proxy.
// A trusted peer may also connect without a header (a health check of its
// own); any other peer that sends one is cut off, so that no client names
// its own address.
func proxied(ln net.Listener, trusted []string) (net.Listener, error) {
	policy, err := proxyproto.PolicyFromRanges(trusted, proxyproto.USE, proxyproto.REJECT)
	if err != nil {
		return nil, fmt.Errorf("--proxy-protocol-from: %w", err)
	}
	return &proxyproto.Listener{Listener: ln, ConnPolicy: policy, ReadHeaderTimeout: proxyHeaderTimeout}, nil
}
