package server_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestErrorsBecomeStatus(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t)
	e := s.Echo()
	pods := schema.GroupResource{Resource: "pods"}
	routes := map[string]error{
		"/conflict":    apierrors.NewConflict(pods, "web", errors.New("the object has been modified")),
		"/wrapped":     fmt.Errorf("storage: %w", apierrors.NewNotFound(pods, "web")),
		"/too-large":   echo.ErrStatusRequestEntityTooLarge,
		"/media-type":  echo.NewHTTPError(http.StatusUnsupportedMediaType, `the body of the request was in an unknown format - accepted media types include: application/json`),
		"/bad-request": echo.NewHTTPError(http.StatusBadRequest, "name is required"),
		"/unavailable": echo.NewHTTPError(http.StatusServiceUnavailable, "etcd is not ready"),
		"/internal":    errors.New("secret detail at /var/lib/thing"),
	}
	for path, err := range routes {
		e.GET(path, func(echo.Context) error { return err })
	}
	e.GET("/panic", func(echo.Context) error { panic("secret panic detail") })
	ts := httptest.NewServer(e)
	defer ts.Close()

	for _, tc := range []struct {
		method, path string
		code         int32
		reason       metav1.StatusReason
		message      string
	}{
		{"GET", "/conflict", 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on pods "web": the object has been modified`},
		{"GET", "/wrapped", 404, metav1.StatusReasonNotFound, `pods "web" not found`},
		{"GET", "/nowhere", 404, metav1.StatusReasonNotFound, "the server could not find the requested resource"},
		{"DELETE", "/bad-request", 405, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource"},
		{"GET", "/too-large", 413, metav1.StatusReasonRequestEntityTooLarge, "Request entity too large: the request body is too large"},
		{"GET", "/media-type", 415, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: application/json"},
		{"GET", "/bad-request", 400, metav1.StatusReasonBadRequest, "name is required"},
		{"GET", "/unavailable", 503, metav1.StatusReasonServiceUnavailable, "etcd is not ready"},
		{"GET", "/internal", 500, metav1.StatusReasonInternalError, ""},
		{"GET", "/panic", 500, metav1.StatusReasonInternalError, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.URL+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			st := decodeStatus(t, resp)
			if resp.StatusCode != int(tc.code) || st.Code != tc.code || st.Reason != tc.reason {
				t.Fatalf("got HTTP %d, Status code %d reason %q; want %d %q", resp.StatusCode, st.Code, st.Reason, tc.code, tc.reason)
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure {
				t.Errorf("got kind %q apiVersion %q status %q, want Status v1 Failure", st.Kind, st.APIVersion, st.Status)
			}
			if tc.message != "" && st.Message != tc.message {
				t.Errorf("message = %q, want %q", st.Message, tc.message)
			}
			if strings.Contains(st.Message, "secret") {
				t.Errorf("message %q leaks the internal error", st.Message)
			}
		})
	}

	t.Run("HEAD has no body", func(t *testing.T) {
		resp, err := http.Head(ts.URL + "/nowhere")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.ContentLength > 0 {
			t.Fatalf("HEAD = %d with length %d, want 404 and no body", resp.StatusCode, resp.ContentLength)
		}
	})
}

// A browser at an unknown page gets the friendly page, in its language;
// every client of the API, and any request for an API path, a Status.
func TestUnknownPageIsAPageForBrowsers(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t)
	ts := httptest.NewServer(s.Echo())
	defer ts.Close()
	get := func(path, accept string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept", accept)
		req.Header.Set("Accept-Language", "th")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	if code, ct, body := get("/no-such-page", browser); code != 404 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, `<html lang="th"`) || !strings.Contains(body, "ไม่พบหน้านี้") {
		t.Errorf("a browser at /no-such-page: %d %s\n%.300s", code, ct, body)
	}
	for _, c := range []struct{ path, accept string }{
		{"/no-such-page", "application/json"},
		{"/api/v1/no-such-resource", browser},
		{"/apis/no.such.group/v1", browser},
		{"/kubelab/v1/no-such-thing", browser},
	} {
		if code, ct, body := get(c.path, c.accept); code != 404 || !strings.HasPrefix(ct, "application/json") || !strings.Contains(body, `"kind":"Status"`) {
			t.Errorf("%s with Accept %s: %d %s\n%.300s", c.path, c.accept, code, ct, body)
		}
	}
}

// Every page picks its language by the same rule: a Thai browser gets
// Thai everywhere, the cookie overrides the browser, and ?lang= both.
func TestEveryPageFollowsOneLanguageRule(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t)
	ts := httptest.NewServer(s.Echo())
	defer ts.Close()
	langOf := func(path, cookie, accept string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Accept-Language", accept)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "lang", Value: cookie})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		_, rest, ok := strings.Cut(string(b), `<html lang="`)
		if !ok {
			t.Fatalf("%s: HTTP %d, no <html lang>: %.200s", path, resp.StatusCode, b)
		}
		lang, _, _ := strings.Cut(rest, `"`)
		return lang
	}
	for _, page := range []string{"/lesson/gone", "/lab", "/labs", "/labs/watch", "/quiz", "/quiz/spot-the-bug", "/terminal", "/no-such-page"} {
		for _, c := range []struct{ query, cookie, accept, want string }{
			{"", "", "th-TH,th;q=0.9", "th"},
			{"", "en", "th-TH,th;q=0.9", "en"},
			{"?lang=th", "en", "en-US", "th"},
			// A language the site lacks says nothing: the next source decides.
			{"?lang=fr", "th", "en-US", "th"},
		} {
			if got := langOf(page+c.query, c.cookie, c.accept); got != c.want {
				t.Errorf("%s%s with cookie %q and Accept-Language %q: lang %q, want %q", page, c.query, c.cookie, c.accept, got, c.want)
			}
		}
	}
}
