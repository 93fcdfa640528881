package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pires/go-proxyproto"

	"github.com/kubelab/kubelab/server"
)

// behindProxy is an HTTP client whose every connection to kubelab opens
// with a PROXY v2 header naming client as its source, as HAProxy's
// send-proxy-v2 does for each student behind it.
func behindProxy(client string) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		src := &net.TCPAddr{IP: net.ParseIP(client), Port: 40000}
		if _, err := proxyproto.HeaderProxyFromAddrs(2, src, conn.RemoteAddr()).WriteTo(conn); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
		// The test reads a redirect itself.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// TestProxyProtocolGivesEachClientItsOwnLimits: behind a proxy every
// connection came from the proxy, so one stranger's wrong join codes used
// up the sign-in limit of the whole class. With --proxy-protocol-from the
// limit is each client's again: the stranger is refused once past
// the burst, and a student's first sign-in is not. And a network client named by the header is
// redirected to HTTPS like any other, where the proxy itself (loopback
// here) would not be.
func TestProxyProtocolGivesEachClientItsOwnLimits(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t, func(c *server.Config) { c.ProxyProtocolFrom = []string{"127.0.0.1/32", "::1/128"} })

	resp, err := behindProxy("203.0.113.9").Get(lab.URL() + "/lesson/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("plain HTTP from a network client behind the proxy: %d, want 307 to HTTPS", resp.StatusCode)
	}
	// The proxy's own health check, with no header, is a loopback client.
	if resp, err := http.Get(lab.URL() + "/lesson/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a request with no header from the trusted proxy: %v %v", resp, err)
	}

	signIn := func(client *http.Client) int {
		t.Helper()
		form := url.Values{"name": {"Mallory"}, "code": {"not-the-code"}}
		req, _ := http.NewRequest("POST", lab.SecureURL()+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The limit is a burst of 60 and one more a second: however slow the
	// machine, 400 attempts in a row meet it.
	stranger := behindProxy("203.0.113.66")
	sent := 0
	for sent < 400 {
		sent++
		if signIn(stranger) == http.StatusTooManyRequests {
			break
		}
	}
	if sent == 400 {
		t.Fatal("400 wrong join codes from one client behind the proxy: none refused with 429")
	}
	if code := signIn(behindProxy("198.51.100.20")); code == http.StatusTooManyRequests {
		t.Fatal("another client behind the same proxy was refused with 429: the limit is the proxy's, not each client's")
	}
	t.Logf("behind the proxy: the stranger's sign-in %d was refused; the next client's went through", sent)
}

// TestProxyProtocolFromAnotherPeerIsCutOff: a client that is not the
// trusted proxy cannot name its own address with a header: its connection
// is closed unanswered. Without a header it is served as itself.
func TestProxyProtocolFromAnotherPeerIsCutOff(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t, func(c *server.Config) { c.ProxyProtocolFrom = []string{"10.0.0.0/8"} })
	if _, err := behindProxy("203.0.113.9").Get(lab.URL() + "/readyz"); err == nil {
		t.Fatal("a header from an untrusted peer was accepted")
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(lab.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("a request with no header from another peer: %q %v", line, err)
	}
}
