// Package webclient sends the HTTP requests of tests that act as a
// browser or a script would, and reads each answer whole.
package webclient

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Send sends method target with body, if any, and header pairs (set in
// order, so a later pair overrides an earlier one); it answers the
// response, its body read and closed, and that body. A request that gets
// no answer ends the test.
func Send(t testing.TB, c *http.Client, method, target, body string, header ...string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
