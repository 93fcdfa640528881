package classroom_test

// Anyone on the classroom network, with no join code: what the sign-in
// pages, open to all, let a stranger do to the class.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"github.com/kubelab/kubelab/internal/webclient"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// strangerConn is a TLS connection to the class's HTTPS port from the
// loopback address from, as a machine of the classroom network would
// open one.
func strangerConn(t *testing.T, c *class, from string) *tls.Conn {
	t.Helper()
	u, _ := url.Parse(c.httpsURL)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := tls.DialWithDialer(d, "tcp", u.Host, &tls.Config{RootCAs: c.roots(t), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// strangerClient is a client whose connections come from the loopback
// address from.
func strangerClient(t *testing.T, c *class, from string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, TLSClientConfig: &tls.Config{RootCAs: c.roots(t)}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// multipartFiles lists the files Go's multipart reader spills to dir.
func multipartFiles(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "multipart-*"))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// Finding: a multipart body posted to a sign-in page, with no join code,
// was parsed whole and its file left in the temporary directory for
// good (400 MB a request). Each sign-in page now refuses a multipart
// body unread with 415, and nothing is left on the disk.
func TestStrangerMultipartSignInLeavesNothingOnDisk(t *testing.T) {
	tmp := t.TempDir()
	c := newClass(t)
	c.Env = []string{"TMPDIR=" + tmp}
	c.start(t)
	// Over the 32 MiB Go's multipart reader keeps in memory (and its
	// 10 MiB for the other fields), so that a parse would spill to disk.
	const size = 64 << 20
	for _, path := range []string{"/signin", "/labs/dashboard/signin"} {
		conn := strangerConn(t, c, "127.0.0.1")
		const boundary = "kubelabtest"
		head := fmt.Sprintf("--%s\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nx\r\n--%s\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\nContent-Type: application/octet-stream\r\n\r\n", boundary, boundary)
		tail := fmt.Sprintf("\r\n--%s--\r\n", boundary)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n",
			path, conn.RemoteAddr(), boundary, len(head)+size+len(tail))
		// The body goes on being sent while the answer is read, as
		// curl's would; once the server has answered, it may stop reading.
		go func() {
			io.WriteString(conn, head)
			io.Copy(conn, io.LimitReader(zeros{}, size))
			io.WriteString(conn, tail)
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("POST %s, multipart: %d %.200s, want 415", path, resp.StatusCode, body)
		}
		conn.Close()
	}
	// The server answered each; a class that still parsed would be
	// writing to its file now. A sign-in afterwards, answered, shows the
	// server is past both.
	signIn(t, c.browser(t), c.httpsURL, "after the stranger")
	if left := multipartFiles(t, tmp); len(left) > 0 {
		t.Errorf("the multipart sign-ins left files in the temporary directory: %v", left)
	}

	// A url-encoded form has a cap too: 1 MiB is refused with 413.
	big := url.Values{"name": {strings.Repeat("a", 1<<20)}, "code": {joinCode}}.Encode()
	resp, body := webclient.Send(t, strangerClient(t, c, "127.0.0.1"), "POST", c.httpsURL+"/signin", big,
		"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 1 MiB sign-in form: %d %.200s, want 413", resp.StatusCode, body)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// stalledSignin sends a sign-in's headers and a few bytes of its body,
// and no more, from the address from.
func stalledSignin(t *testing.T, c *class, from string) *tls.Conn {
	t.Helper()
	conn := strangerConn(t, c, from)
	fmt.Fprintf(conn, "POST /signin HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nname=", conn.RemoteAddr())
	return conn
}

// Finding: every request without credentials shared one allowance of 50
// places, and a slowly sent body kept its place with no time limit. 50
// stalled sign-ins from one machine locked every student out of signing
// in, and /readyz (compose's health check) answered 429, for as long as
// the stranger liked. Now the places are counted per address, a body has
// the request timeout to arrive, and the health checks are exempt.
func TestStrangerSlowSignInsLockNoOneOut(t *testing.T) {
	// Wide of a loaded machine: everything up to the health checks must
	// happen while the stalled bodies still hold their places.
	const timeout = 30 * time.Second
	c := startClass(t, "--adaptive-inflight-limit=false", "--request-timeout", timeout.String())
	stranger := strangerClient(t, c, "127.0.0.1")
	form := url.Values{"name": {"x"}, "code": {"wrong"}}.Encode()

	start := time.Now()
	var stalled []*tls.Conn
	for range 60 {
		stalled = append(stalled, stalledSignin(t, c, "127.0.0.1"))
	}
	// The stalled sign-ins hold the stranger's 50 places: one more from
	// the same address is refused. (They reach the server on their own
	// time, so the check waits for it.)
	deadline := time.Now().Add(timeout / 2)
	for {
		resp, body := webclient.Send(t, stranger, "POST", c.httpsURL+"/signin", form,
			"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with 60 sign-ins stalled from one address, one more from it: %d %s, want 429", resp.StatusCode, body)
		}
	}
	if held := time.Since(start); held >= timeout {
		t.Fatalf("the places were full only after %s, past the bodies' deadline: the check below would prove nothing", held)
	}

	// Everyone else is served: a student on another machine signs in, and
	// the health check answers from the stranger's own address.
	signIn(t, strangerClient(t, c, "127.0.0.2"), c.httpsURL, "bob")
	for _, path := range []string{"/readyz", "/healthz", "/livez"} {
		if resp, body := webclient.Send(t, stranger, "GET", c.httpsURL+path, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s from the stranger's address while the places are held: %d %s", path, resp.StatusCode, body)
		}
	}
	if time.Since(start) >= timeout {
		t.Fatalf("the checks ended after the bodies' deadline (%s): they prove nothing", timeout)
	}

	// Each stalled body gets the request timeout, then its place is
	// given back and its connection closed.
	for i, conn := range stalled {
		conn.SetReadDeadline(time.Now().Add(4 * timeout))
		if _, err := io.Copy(io.Discard, conn); err != nil {
			t.Fatalf("stalled sign-in %d: still open %s after it stalled: %v", i, time.Since(start).Round(time.Second), err)
		}
	}
	held := time.Since(start)
	t.Logf("60 stalled sign-ins: the last was closed %s after they began (request timeout %s)", held.Round(100*time.Millisecond), timeout)
	if held < timeout {
		t.Errorf("the stalled sign-ins were closed after %s, before the request timeout (%s): a slow network's student would fail too", held, timeout)
	}
	// And the stranger's address is served again.
	resp, body := webclient.Send(t, stranger, "POST", c.httpsURL+"/signin", form,
		"Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a sign-in with a wrong code once the stalled ones ended: %d %s, want 403", resp.StatusCode, body)
	}
}
