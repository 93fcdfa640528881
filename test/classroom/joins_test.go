package classroom_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

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
