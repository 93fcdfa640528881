package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// requestAs sends a GET to path on base with Host set to host, as a
// browser does after DNS rebinding made host resolve to loopback.
func requestAs(t *testing.T, base, path, host, accept string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 600)) // enough for a Status; a page is cut short
	return resp.StatusCode, resp.Header, string(body)
}

// TestLocalModeRefusesRebindingHosts: in local mode, where a request
// without a token is cluster-admin, a request naming any host but a
// loopback one gets 421, as a Status for API clients and as text for
// browsers; loopback names are served.
func TestLocalModeRefusesRebindingHosts(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	port := strings.TrimPrefix(lab.URL(), "http://127.0.0.1")
	for _, host := range []string{"attacker.example:8080", "attacker.example" + port, "192.168.1.20" + port, "localhost.attacker.example" + port, "127.0.0.1.nip.io" + port} {
		code, _, body := requestAs(t, lab.URL(), "/api/v1/namespaces", host, "application/json")
		var st metav1.Status
		if err := json.Unmarshal([]byte(body), &st); err != nil && code == http.StatusMisdirectedRequest {
			t.Errorf("Host %s: the 421's body is no Status: %v", host, err)
		}
		if code != http.StatusMisdirectedRequest || st.Kind != "Status" || st.Code != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d %s, want a 421 Status", host, code, body)
		}
		code, h, body := requestAs(t, lab.URL(), "/", host, "text/html,application/xhtml+xml")
		if code != http.StatusMisdirectedRequest || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") || !strings.Contains(body, "127.0.0.1") {
			t.Errorf("Host %s from a browser: %d %s %q, want a 421 page saying where to go", host, code, h.Get("Content-Type"), body)
		}
	}
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "LOCALHOST" + port, "[::1]" + port, "127.0.0.2" + port, "localhost"} {
		if code, _, body := requestAs(t, lab.URL(), "/api/v1/namespaces", host, ""); code != http.StatusOK {
			t.Errorf("Host %s: %d %s, want 200", host, code, body)
		}
	}
}

// TestHostCheckOnlyInLocalMode: a class, and local mode given to the
// network on purpose, answer whatever name students dial.
func TestHostCheckOnlyInLocalMode(t *testing.T) {
	t.Parallel()
	for name, option := range map[string]func(*server.Config){
		"classroom":                   func(c *server.Config) { c.Classroom = true },
		"local-mode-admin-on-network": func(c *server.Config) { c.LocalModeAdminOnNetwork = true },
	} {
		t.Run(name, func(t *testing.T) {
			lab := kubelabtest.Start(t, option)
			u, _ := url.Parse(lab.URL())
			if code, _, body := requestAs(t, lab.URL(), "/version", "kubelab.school.example:"+u.Port(), ""); code != http.StatusOK {
				t.Errorf("%d %s, want 200", code, body)
			}
		})
	}
}
