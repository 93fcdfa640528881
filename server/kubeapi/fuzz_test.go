package kubeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// perInputLimit bounds how long one fuzzed request may take: longer is a
// hang. The slowest honest answer is a resourceVersion from the future,
// which waits 3 s for etcd to catch up before its 504.
const perInputLimit = 15 * time.Second

// requestDeadline ends a fuzzed watch, as a client going away would.
const requestDeadline = 5 * time.Second

// serveBounded drives a router directly (the API behind kubelab's front
// door, or a whole kubelab's: either way its authentication, RBAC,
// admission, error handler and recover middleware see every input, not
// the API alone) and fails if the request does not finish in time.
func serveBounded(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), requestDeadline)
	defer cancel()
	req = req.WithContext(ctx)
	req.Host = "127.0.0.1" // httptest names example.com, which a local kubelab refuses (DNS rebinding)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
	case <-time.After(perInputLimit):
		t.Fatalf("%s %s did not answer within %s", req.Method, req.URL, perInputLimit)
	}
	return rec
}

// checkAnswer: bad input gets a 4xx Kubernetes Status with a reason,
// never a 5xx; the one 5xx kube-apiserver gives for a client's input is
// the 504 of a resourceVersion newer than etcd's, with its cause.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, what string) {
	t.Helper()
	if rec.Code < 400 {
		return
	}
	var st status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("%s: %d %q is not a Status: %v", what, rec.Code, rec.Body.Bytes(), err)
	}
	if st.Kind != "Status" || st.Status != "Failure" || st.Code != rec.Code || st.Reason == "" {
		t.Fatalf("%s: %d with Status %+v", what, rec.Code, st)
	}
	if rec.Code >= 500 && !tooLargeRV(st) {
		t.Fatalf("%s: %d %s %q for a client's input", what, rec.Code, st.Reason, st.Message)
	}
}

func tooLargeRV(st status) bool {
	return st.Code == 504 && st.Reason == "Timeout" && len(st.Details.Causes) == 1 &&
		st.Details.Causes[0].Reason == "ResourceVersionTooLarge"
}

// withPipeline serves the API behind kubelab's front door: the fuzzed
// inputs meet authentication, RBAC and admission as on a local kubelab.
func withPipeline(c *apitest.Config) { c.Pipeline = true }

var bodyTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}

var fieldValidations = []string{"", "Strict", "Warn", "Ignore"}

// FuzzCreateBody: a POST body of any bytes, as JSON, YAML or protobuf, for
// a pod or a configmap, under each fieldValidation, with or without dryRun.
func FuzzCreateBody(f *testing.F) {
	lab := apitest.Start(f, withPipeline)
	h := lab.Echo()
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fz","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fz"},"data":{"k":"v"}}`
	for _, seed := range []struct {
		sel  uint8
		body string
	}{
		{0, pod}, {1, cm}, {0, `{"metadata":`}, {0, `{"apiVersion":"v1","kind":"Pod","kind":"ConfigMap"}`},
		{2, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fz\nspec:\n  containers:\n  - name: c\n    image: i\n"},
		{3, "apiVersion: v1\nkind: ConfigMap\nmetadata: &a\n  name: *a\n"},
		{4, "k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1b\n\x11\n\x01c\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x06\n\x01k\x12\x01v\x1a\x00\"\x00"},
		{5, "k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1b\n\x11\n\x01c\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x06\n\x01k\x12\x01v\x1a\x00\"\x00"},
		{16, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fz","generation":99999999999999999999},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":1e10}]}]}}`},
		{33, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fz"},"data":{"k":"\xff\xfe"}}`},
		{48, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fz"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1e999999"}}}]}}`},
	} {
		f.Add(seed.sel, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		resource := []string{"pods", "configmaps"}[sel&1]
		contentType := bodyTypes[int(sel>>1&3)%len(bodyTypes)]
		q := url.Values{}
		if v := fieldValidations[sel>>3&3]; v != "" {
			q.Set("fieldValidation", v)
		}
		if sel&0x20 != 0 {
			q.Set("dryRun", "All")
		}
		path := "/api/v1/namespaces/internals-demo/" + resource + "?" + q.Encode()
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := serveBounded(t, h, req)
		checkAnswer(t, rec, fmt.Sprintf("POST %s (%s) %q", path, contentType, body))
	})
}

var patchContentTypes = []string{
	"application/json-patch+json", "application/merge-patch+json",
	"application/strategic-merge-patch+json", "application/apply-patch+yaml",
}

// FuzzPatch: a PATCH body of any bytes under each of the four patch types,
// against the lesson's ssa-demo pod (dry run, so every input meets the same
// object) or a pod that does not exist (which apply creates).
func FuzzPatch(f *testing.F) {
	lab := apitest.Start(f, withPipeline)
	h := lab.Echo()
	for _, seed := range []struct {
		sel  uint8
		body string
	}{
		{0, `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`},
		{0, `[{"op":"move","from":"/metadata","path":"/metadata/labels"}]`},
		{0, `[{"op":"copy","from":"/spec","path":"/spec/containers/0/x"}]`},
		{0, `[{"op":"replace","path":"/spec/containers/-1","value":1}]`},
		{0, `[{"op":"test","path":"/metadata/name","value":"ssa-demo"},{"op":"remove","path":"/spec"}]`},
		{1, `{"metadata":{"labels":{"x":"y"}}}`},
		{1, `{"metadata":null,"spec":{"containers":null}}`},
		{2, `{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}`},
		{2, `{"spec":{"$setElementOrder/containers":[{"name":"x"}],"containers":[{"$patch":"delete","name":"main"}]}}`},
		{2, `{"metadata":{"$patch":"replace"},"$retainKeys":["x"]}`},
		{3, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa-demo\n  labels:\n    x: \"y\"\n"},
		{7, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fz-new\nspec:\n  containers:\n  - name: c\n    image: i\n"},
	} {
		f.Add(seed.sel, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		contentType := patchContentTypes[sel&3]
		name := "ssa-demo"
		if sel&4 != 0 {
			name = "fz-new"
		}
		q := url.Values{"dryRun": {"All"}}
		if contentType == "application/apply-patch+yaml" {
			q.Set("fieldManager", "fuzz")
			if sel&8 != 0 {
				q.Set("force", "true")
			}
		}
		if v := fieldValidations[sel>>4&3]; v != "" {
			q.Set("fieldValidation", v)
		}
		path := "/api/v1/namespaces/internals-demo/pods/" + name + "?" + q.Encode()
		req := httptest.NewRequest("PATCH", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := serveBounded(t, h, req)
		checkAnswer(t, rec, fmt.Sprintf("PATCH %s (%s) %q", path, contentType, body))
	})
}

// FuzzSelectors: any labelSelector and fieldSelector on a list and a watch.
func FuzzSelectors(f *testing.F) {
	lab := apitest.Start(f, withPipeline)
	h := lab.Echo()
	for _, s := range [][2]string{
		{"app=ssa-demo", "metadata.name=ssa-demo"}, {"a in (b,c),!d", "status.phase!=Running"},
		{"a===", ""}, {"", "spec.color=red"}, {"x notin ()", "metadata.name==a,metadata.namespace=b"},
		{strings.Repeat("a", 64) + "=" + strings.Repeat("b", 64), `metadata.name=\,`},
		{"a,,b", "=,="}, {"!", "metadata.name"}, {"a>1,b<2", "spec.nodeName="},
	} {
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, label, field string, watch bool) {
		q := url.Values{"labelSelector": {label}, "fieldSelector": {field}}
		if watch {
			q.Set("watch", "1")
			q.Set("timeoutSeconds", "1")
		}
		path := "/api/v1/namespaces/internals-demo/pods?" + q.Encode()
		rec := serveBounded(t, h, httptest.NewRequest("GET", path, nil))
		checkAnswer(t, rec, "GET "+path)
	})
}

// FuzzListWatchParams: any resourceVersion, resourceVersionMatch, limit,
// continue, timeoutSeconds, sendInitialEvents and allowWatchBookmarks on
// a list or a watch.
func FuzzListWatchParams(f *testing.F) {
	lab := apitest.Start(f, withPipeline)
	h := lab.Echo()
	type params struct {
		watch                                               bool
		rv, match, limit, cont, timeout, initial, bookmarks string
	}
	for _, p := range []params{
		{false, "", "", "1", "", "", "", ""},
		{false, "0", "NotOlderThan", "", "", "", "", ""},
		{false, "1", "Exact", "2", "", "", "", ""},
		{false, "-1", "Bogus", "-1", "zzz", "", "", ""},
		{false, "99999999999999999999", "", "1", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiIuLi9vdGhlciJ9", "", "", ""},
		{true, "", "", "", "", "1", "", "true"},
		{true, "", "NotOlderThan", "", "", "1", "true", "true"},
		{true, "0", "Exact", "", "", "-5", "yes", ""},
		{true, "1", "", "", "", "9223372036854775807", "", ""},
		{true, "9223372036854775807", "", "", "", "1", "false", "false"},
	} {
		f.Add(p.watch, p.rv, p.match, p.limit, p.cont, p.timeout, p.initial, p.bookmarks)
	}
	f.Fuzz(func(t *testing.T, watch bool, rv, match, limit, cont, timeout, initial, bookmarks string) {
		q := url.Values{}
		for k, v := range map[string]string{"resourceVersion": rv, "resourceVersionMatch": match, "limit": limit,
			"continue": cont, "timeoutSeconds": timeout, "sendInitialEvents": initial, "allowWatchBookmarks": bookmarks} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if watch {
			q.Set("watch", "1")
		}
		path := "/api/v1/namespaces/internals-demo/pods?" + q.Encode()
		rec := serveBounded(t, h, httptest.NewRequest("GET", path, nil))
		checkAnswer(t, rec, "GET "+path)
	})
}

// FuzzRequestPath: any path under /api or /apis, read or dry-run deleted:
// names with "..", encoded slashes, NUL, unknown groups and subresources.
//
// On a whole kubelab: before the front door, its limits tell long-running
// requests from short ones by the path, and they must meet every path too.
func FuzzRequestPath(f *testing.F) {
	lab := kubelabtest.Start(f)
	h := lab.Echo()
	for _, p := range []string{
		"/api/v1/namespaces/internals-demo/pods/ssa-demo", "/api/v1/namespaces/internals-demo/pods/..",
		"/api/v1/namespaces/%2E%2E/pods", "/api/v1/namespaces/internals-demo/pods/a%2Fb/status",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", "/api/v1/watch/namespaces/internals-demo/pods",
		"/api/v1/namespaces/internals-demo/pods/a%00b", "/apis//v1//pods", "/api/v1/namespaces/internals-demo/finalize",
		"/api/v1/namespaces/internals-demo/pods/ssa-demo/status/extra/%",
	} {
		f.Add(false, p)
	}
	f.Fuzz(func(t *testing.T, del bool, path string) {
		if !strings.HasPrefix(path, "/api") {
			path = "/api/" + path
		}
		u, err := url.Parse(path)
		if err != nil || u.Host != "" || u.Scheme != "" {
			return // not a path a client can send
		}
		q := u.Query()
		method := "GET"
		if del {
			method = "DELETE"
			q.Set("dryRun", "All")
		} else if q.Has("watch") {
			q.Set("timeoutSeconds", "1")
		}
		u.RawQuery = q.Encode()
		req := httptest.NewRequest(method, "/", nil)
		req.URL = u
		req.RequestURI = u.RequestURI()
		rec := serveBounded(t, h, req)
		checkAnswer(t, rec, method+" "+u.String())
	})
}
