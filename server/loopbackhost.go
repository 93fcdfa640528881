package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// loopbackHostOnly refuses, with 421 Misdirected Request, a request whose
// Host is not a loopback name. Local mode makes requests without a token
// cluster-admin and listens on loopback; but a web page at
// attacker.example can make its name resolve to 127.0.0.1 (DNS
// rebinding), and its requests then reach kubelab as same-origin ones,
// with the attacker's name in Host. A browser always sends the name it
// resolved, so checking Host stops them.
func loopbackHostOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if isLoopbackHost(requestHost(r.Host)) {
			return next(c)
		}
		msg := fmt.Sprintf("kubelab in local mode answers only requests for localhost, 127.0.0.1 or [::1], not %q: a web page whose name is made to resolve to this machine must not reach an API where everyone is cluster-admin. Open http://127.0.0.1 with kubelab's port, or start kubelab with --local-mode-admin-on-network", r.Host)
		if strings.Contains(r.Header.Get("Accept"), "text/html") {
			return c.String(http.StatusMisdirectedRequest, msg+"\n")
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusMisdirectedRequest,
			Reason:  metav1.StatusReason("MisdirectedRequest"),
			Message: msg,
		}}
	}
}

// requestHost is a Host header's name without its port or an IPv6
// address's brackets.
func requestHost(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}
