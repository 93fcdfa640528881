package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/server/pki"
)

// serving is what the HTTPS listener serves with, and what kubeconfigs
// and every namespace's kube-root-ca.crt trust: kubelab's own CA
// (pki.Authority), or the instructor's certificate (pki.Files).
type serving interface {
	CertPEM() []byte
	TLSConfig() *tls.Config
	Describe() string
}

// loadServing reads the instructor's certificate if one is given, and
// otherwise kubelab's CA from etcd, making or replacing it as the
// configuration asks.
func (s *Server) loadServing(ctx context.Context) (serving, error) {
	if s.cfg.TLSCertFile != "" {
		return pki.LoadFiles(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
	}
	return pki.Load(ctx, s.etcd.Client(), pki.Options{Hosts: s.cfg.TLSSANs, Validity: s.cfg.CAValidity}, func(format string, args ...any) {
		s.log.Warn(fmt.Sprintf(format, args...))
	})
}

// requireTLS sends plain-HTTP requests of classroom mode to the HTTPS
// listener, before anything reads their credentials or answers with one:
// on a classroom network plain HTTP is read and replayed, so a display
// name, a session cookie, a kubeconfig's token or the instructor's token
// must never travel in it, nor be handed out over it. Exempt are clients
// on loopback (the instructor's own machine, health checks inside a
// container) and the health endpoints, which carry no secret and which
// load balancers probe over plain HTTP. Local mode listens on loopback
// only and keeps plain HTTP.
//
// The redirect is a 307: it keeps the method and body (a form POST
// arrives as a POST), and, being temporary, browsers do not cache it
// beyond this run's ports, which the next class may change.
func (s *Server) requireTLS(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !s.cfg.Classroom || s.secureAddr == "" || r.TLS != nil || fromLoopback(r) || isHealthPath(r.URL.Path) {
			return next(c)
		}
		target, err := url.Parse(s.kubectlServer(r) + r.URL.RequestURI())
		if err != nil || target.Scheme != "https" {
			return apierrors.NewBadRequest(fmt.Sprintf("kubelab serves this network over HTTPS only, at port %s; this request's Host %q is not an address to send it to", s.securePort(), r.Host))
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.Redirect(http.StatusTemporaryRedirect, target.String())
	}
}

// fromLoopback reports whether the connection comes from this machine.
// It reads the connection's address, never a forwarded-for header, which
// anyone can set.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// securePort is the HTTPS listener's port as students reach it: the
// published one, if Docker or a proxy publishes it on another.
func (s *Server) securePort() string {
	if s.cfg.PublishedSecurePort != 0 {
		return strconv.Itoa(s.cfg.PublishedSecurePort)
	}
	_, port, _ := net.SplitHostPort(s.secureAddr)
	return port
}

// caFingerprint is the SHA-256 fingerprint of the CA certificate, as
// browsers show it in their certificate viewer: what students compare
// before they trust kubelab's CA.
func caFingerprint(certPEM []byte) string {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return ""
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return ""
	}
	sum := sha256.Sum256(block.Bytes)
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(hexes, ":")
}
