package kubeapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
)

type status struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
	Details struct {
		Causes []struct{ Field, Message, Reason string } `json:"causes"`
	} `json:"details"`
}

func do(t *testing.T, lab served, method, path, contentType, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, lab.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

const podsPath = "/api/v1/namespaces/internals-demo/pods"

// TestBadInputGetsAStatusAndWritesNothing: every malformed request gets the
// Status a real API server gives, and etcd's revision does not move.
func TestBadInputGetsAStatusAndWritesNothing(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	before := listRV(t, lab)
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("a", 3<<20) + `"}}`
	for _, tc := range []struct {
		name, method, path, contentType, body string
		code                                  int
		reason, message                       string
	}{
		{"ErrMalformedJSON", "POST", podsPath, "application/json", `{"metadata":`, 400, "BadRequest", "could not be decoded"},
		{"ErrMalformedYAML", "POST", podsPath, "application/yaml", "metadata: [", 400, "BadRequest", "could not be decoded"},
		{"ErrGarbageProtobuf", "POST", podsPath, "application/vnd.kubernetes.protobuf", "k8s\x00\xff\xff", 400, "BadRequest", "could not be decoded"},
		{"ErrWrongKind", "POST", podsPath, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, "BadRequest", "the kind in the data (ConfigMap) does not match the expected kind (Pod)"},
		{"ErrWrongAPIVersion", "POST", podsPath, "application/json", `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"x"}}`, 400, "BadRequest", "does not match the expected API version (v1)"},
		{"ErrInvalidName", "POST", podsPath, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Not_Valid"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 422, "Invalid", `Pod "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid"`},
		{"ErrNoName", "POST", podsPath, "application/json", `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"i"}]}}`, 422, "Invalid", "metadata.name: Required value"},
		{"ErrInvalidLabel", "POST", podsPath, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"bad key!":"v"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 422, "Invalid", "metadata.labels"},
		{"ErrNoContainers", "POST", podsPath, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{}}`, 422, "Invalid", "spec.containers: Required value"},
		{"ErrNamespaceMismatch", "POST", podsPath, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request"},
		{"ErrUnknownFieldStrict", "POST", podsPath + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"}],"bogus":1}}`, 400, "BadRequest", `unknown field "spec.bogus"`},
		{"ErrTooLarge", "POST", "/api/v1/namespaces/internals-demo/configmaps", "application/json", big, 413, "RequestEntityTooLarge", "limit is 3145728"},
		{"ErrUnsupportedMediaType", "POST", podsPath, "text/plain", "hello", 415, "UnsupportedMediaType", "unknown format"},
		{"ErrUnsupportedPatch", "PATCH", podsPath + "/ssa-demo", "application/json", `{}`, 415, "UnsupportedMediaType", "application/merge-patch+json"},
		{"ErrApplyWithoutManager", "PATCH", podsPath + "/ssa-demo", "application/apply-patch+yaml", "apiVersion: v1\nkind: Pod\n", 400, "BadRequest", "fieldManager"},
		{"ErrEmptyBody", "POST", podsPath, "application/json", "", 400, "BadRequest", "empty"},
		{"ErrNameMismatchOnPut", "PUT", podsPath + "/ssa-demo", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other"}}`, 400, "BadRequest", "does not match the name on the URL"},
		{"ErrStaleResourceVersion", "PUT", podsPath + "/ssa-demo", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ssa-demo","resourceVersion":"1"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 409, "Conflict", "the object has been modified"},
		{"ErrCreateOnNamedPath", "POST", podsPath + "/ssa-demo", "application/json", `{}`, 405, "MethodNotAllowed", ""},
		{"ErrUpdateCollection", "PUT", podsPath, "application/json", `{}`, 405, "MethodNotAllowed", ""},
		{"ErrPatchCollection", "PATCH", podsPath, "application/merge-patch+json", `{}`, 405, "MethodNotAllowed", ""},
		{"ErrUnknownResource", "GET", "/api/v1/namespaces/internals-demo/widgets", "", "", 404, "NotFound", "the server could not find the requested resource"},
		{"ErrUnknownGroup", "GET", "/apis/nope.example.com/v1", "", "", 404, "NotFound", "the server could not find the requested resource"},
		{"ErrClusterScopedInNamespace", "GET", "/api/v1/namespaces/internals-demo/namespaces", "", "", 404, "NotFound", ""},
		{"ErrUnknownSubresource", "GET", podsPath + "/ssa-demo/exec", "", "", 404, "NotFound", ""},
		{"ErrBelowSubresource", "GET", podsPath + "/ssa-demo/status/extra", "", "", 404, "NotFound", "the server could not find the requested resource"},
		{"ErrProxyVerb", "GET", "/api/v1/proxy/namespaces/internals-demo/pods/ssa-demo", "", "", 404, "NotFound", "the server could not find the requested resource"},
		{"ErrCreateOnWatchPath", "POST", "/api/v1/watch/namespaces/internals-demo/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"}}`, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource"},
		{"ErrNotFound", "GET", podsPath + "/nope", "", "", 404, "NotFound", `pods "nope" not found`},
		{"ErrBadLabelSelector", "GET", podsPath + "?labelSelector=a%3D%3D%3D", "", "", 400, "BadRequest", ""},
		{"ErrUnknownFieldSelector", "GET", podsPath + "?fieldSelector=spec.color%3Dred", "", "", 400, "BadRequest", "field label not supported: spec.color"},
		{"ErrBadLimit", "GET", podsPath + "?limit=ten", "", "", 400, "BadRequest", "limit"},
		{"ErrBadResourceVersion", "GET", podsPath + "?resourceVersion=abc", "", "", 400, "BadRequest", "invalid resource version"},
		{"ErrBadTimeout", "GET", podsPath + "?watch=1&timeoutSeconds=x", "", "", 400, "BadRequest", "timeoutSeconds"},
		{"ErrBadContinue", "GET", podsPath + "?limit=1&continue=zzz", "", "", 400, "BadRequest", "continue key is not valid"},
		// DeleteOptions, with kube-apiserver 1.37's messages. A bad one must
		// not delete anything (dryRun=Foo used to be taken for no dry run).
		{"ErrDeleteBadDryRun", "DELETE", podsPath + "/ssa-demo?dryRun=Foo", "", "", 422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Foo"]: supported values: "All"`},
		{"ErrDeleteBadPropagation", "DELETE", podsPath + "/ssa-demo?propagationPolicy=Bad", "", "", 422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bad": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{"ErrDeleteOrphanAndPropagation", "DELETE", podsPath + "/ssa-demo?propagationPolicy=Orphan&orphanDependents=true", "", "", 422, "Invalid", `propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`},
		{"ErrDeleteBadGracePeriod", "DELETE", podsPath + "/ssa-demo?gracePeriodSeconds=abc", "", "", 400, "BadRequest", `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"ErrDeleteBodyNotJSON", "DELETE", podsPath + "/ssa-demo", "application/json", "xx", 400, "BadRequest", "couldn't get version/kind; json parse error: invalid character 'x' looking for beginning of value"},
		{"ErrDeleteBodyWrongKind", "DELETE", podsPath + "/ssa-demo", "application/json", `{"kind":"Pod","apiVersion":"v1"}`, 400, "BadRequest", `no kind "Pod" is registered for version "v1"`},
		{"ErrDeleteBodyTextPlain", "DELETE", podsPath + "/ssa-demo", "text/plain", "{}", 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{"ErrDeleteBodyWinsOverQuery", "DELETE", podsPath + "/ssa-demo?propagationPolicy=Orphan", "application/json", `{"propagationPolicy":"Bad","dryRun":["Foo"]}`, 422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: [propagationPolicy: Unsupported value: "Bad": supported values: "Foreground", "Background", "Orphan", "nil", dryRun: Unsupported value: ["Foo"]: supported values: "All"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, lab, tc.method, tc.path, tc.contentType, tc.body)
			var st status
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("%d %q is not a Status: %v", resp.StatusCode, body, err)
			}
			if resp.StatusCode != tc.code || st.Code != tc.code || st.Kind != "Status" || st.Status != "Failure" || st.Reason != tc.reason || !strings.Contains(st.Message, tc.message) {
				t.Fatalf("got %d %+v, want %d %s %q", resp.StatusCode, st, tc.code, tc.reason, tc.message)
			}
		})
	}
	resp, body := do(t, lab, "GET", podsPath, "", "", "Accept", "text/html")
	if resp.StatusCode != 406 || !strings.Contains(string(body), `"reason":"NotAcceptable"`) {
		t.Errorf("unacceptable Accept: %d %s", resp.StatusCode, body)
	}
	if after := listRV(t, lab); after != before {
		t.Fatalf("etcd revision moved from %s to %s: a bad request wrote something", before, after)
	}
}

func listRV(t *testing.T, lab served) string {
	t.Helper()
	_, body := do(t, lab, "GET", "/api/v1/configmaps", "", "")
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Metadata.ResourceVersion == "" {
		t.Fatalf("list: %v %s", err, body)
	}
	return list.Metadata.ResourceVersion
}

// TestNegotiationAnswersAsKube: the Accept header and the client are
// answered as kube-apiserver 1.37 answers them (its messages, verbatim).
func TestNegotiationAnswersAsKube(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	const cm = "/api/v1/namespaces/internals-demo/configmaps"
	const allTypes = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	for _, tc := range []struct {
		name, path string
		headers    []string
		code       int
		message    string
	}{
		{"ErrTableInProtobuf", cm, []string{"Accept", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"}, 406, allTypes},
		{"ErrTableOfDiscovery", "/api/v1", []string{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}, 406, allTypes},
		{"ErrWatchInYAML", cm + "?watch=1&timeoutSeconds=1", []string{"Accept", "application/yaml"}, 406,
			"only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"},
		{"ErrUnknownConversion", cm, []string{"Accept", "application/json;as=Pod;v=v1;g="}, 406, allTypes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, lab, "GET", tc.path, "", "", tc.headers...)
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.message) {
				t.Fatalf("got %d %s, want %d %q", resp.StatusCode, body, tc.code, tc.message)
			}
		})
	}
	// curl, wget and browsers get indented JSON, other clients compact JSON.
	for _, tc := range []struct {
		name, query, userAgent string
		indented               bool
	}{
		{"Curl", "", "curl/8.5.0", true},
		{"Browser", "", "Mozilla/5.0 (X11; Linux x86_64)", true},
		{"CurlPrettyFalse", "?pretty=false", "curl/8.5.0", false},
		{"GoClientPretty", "?pretty=true", "Go-http-client/1.1", true},
		{"GoClient", "", "Go-http-client/1.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, lab, "GET", podsPath+"/ssa-demo"+tc.query, "", "", "User-Agent", tc.userAgent)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got := strings.HasPrefix(string(body), "{\n  \"kind\""); got != tc.indented {
				t.Fatalf("indented: %v, want %v: %.80s", got, tc.indented, body)
			}
		})
	}
}
