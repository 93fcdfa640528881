package classroom_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/webclient"
)

// TestJoinsPerAddressAreCapped: a sign-in needs only the shared join
// code, and each made a new student with 50 requests in flight of their
// own, so one student's four throwaway accounts filled the class's 200
// write slots and a classmate's kubectl create was refused. With
// --max-joins-per-address, one machine gets that many students (here 2,
// at most 100 slots), the one past it is refused in the page's language,
// and a classmate at another address still joins.
func TestJoinsPerAddressAreCapped(t *testing.T) {
	t.Parallel()
	c := startClass(t, "--max-joins-per-address=2")
	from := func(addr string) *http.Client { return strangerClient(t, c, addr) }
	signin := func(browser *http.Client, name string, header ...string) (int, string) {
		form := url.Values{"name": {name}, "code": {joinCode}}.Encode()
		resp, body := webclient.Send(t, browser, "POST", c.httpsURL+"/signin?lang=th", form,
			append([]string{"Content-Type", "application/x-www-form-urlencoded"}, header...)...)
		return resp.StatusCode, body
	}
	for _, name := range []string{"Mallory", "Mallory helper"} {
		if code, body := signin(from("127.0.0.1"), name, "Accept", "application/json"); code != http.StatusCreated {
			t.Fatalf("%s's sign-in: %d %s", name, code, body)
		}
	}
	code, body := signin(from("127.0.0.1"), "Zz throwaway", "Accept", "application/json")
	if code != http.StatusForbidden || !strings.Contains(body, "2 students have joined from 127.0.0.1") {
		t.Errorf("a third sign-in from one address, by script: %d %s; want 403 saying how many joined from there", code, body)
	}
	if code, body := signin(from("127.0.0.1"), "Zz throwaway"); code != http.StatusForbidden || !strings.Contains(body, "โปรดใช้บัญชีเดิมต่อไป") {
		t.Errorf("a third sign-in from one address, in a Thai browser: %d %s", code, body)
	}
	if code, body := signin(from("127.0.0.2"), "Bob", "Accept", "application/json"); code != http.StatusCreated {
		t.Errorf("a classmate at another address: %d %s", code, body)
	}
	if _, err := c.admin(t).CoreV1().Namespaces().Get(t.Context(), "zz-throwaway", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused student's namespace: %v, want none", err)
	}
}

// TestThrowawaysCannotFillTheWriteSlots is the attack the cap is for:
// four throwaway accounts of one student, each holding its 50 places with
// slowly sent creates, took the class's 200 write slots, and a
// classmate's create got 429. With the default of 3 sign-ins from one
// address, the fourth account is refused, the three hold 150 slots, and
// the classmate's create goes through.
func TestThrowawaysCannotFillTheWriteSlots(t *testing.T) {
	t.Parallel()
	c := startClass(t, "--max-joins-per-address=3", "--adaptive-inflight-limit=false")
	const perUser, classSlots = 50, 200 // server.MaxUserInflight, --max-mutating-requests-inflight
	var throwaways []*student
	for _, name := range []string{"Zz one", "Zz two", "Zz three"} {
		throwaways = append(throwaways, join(t, c.URL(), name))
	}
	form := url.Values{"name": {"Zz four"}, "code": {joinCode}}.Encode()
	if resp, body := webclient.Send(t, http.DefaultClient, "POST", c.URL()+"/signin", form, "Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a fourth throwaway from the same address: %d %s", resp.StatusCode, body)
	}
	for _, s := range throwaways {
		for range perUser {
			stalledCreate(t, s, "")
		}
	}
	// Each throwaway's share is full once its own next request is refused.
	for _, s := range throwaways {
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp, _ := s.apiDo(t, "GET", "/api/v1/namespaces/"+s.name+"/configmaps")
			if resp.StatusCode == http.StatusTooManyRequests {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's %d stalled creates never filled its share", s.name, perUser)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("one address's throwaways hold %d of the class's %d write slots", len(throwaways)*perUser, classSlots)

	jar, _ := cookiejar.New(nil)
	browser := strangerClient(t, c, "127.0.0.2")
	browser.Jar = jar
	bob := signIn(t, browser, c.httpsURL, "Bob")
	bob.downloadKubeconfig(t)
	start := time.Now()
	if _, stderr, err := bob.kubectl(t, "create", "configmap", "bobs", "-n", bob.name); err != nil {
		t.Fatalf("a classmate's create while the throwaways hold their slots: %v %s", err, stderr)
	}
	t.Logf("the classmate's kubectl create succeeded in %s", time.Since(start).Round(time.Millisecond))
}
