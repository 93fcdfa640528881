// Package hostile_test sends a running kubelab the requests an attacker or
// a broken client would, and pins the Status each gets and that none of
// them writes to etcd.
package hostile_test

import (
	"context"
	"encoding/json"
	"fmt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

const (
	pods       = "/api/v1/namespaces/internals-demo/pods"
	configmaps = "/api/v1/namespaces/internals-demo/configmaps"
)

type status struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
}

// etcdRevision is etcd's current revision: any write moves it.
// etcdRevision is the newest revision of the objects under /registry/,
// leaving out APIServices, whose Available condition kubelab itself
// updates in the background: a write by a request moves it.
func etcdRevision(t *testing.T, lab *kubelabtest.Lab) int64 {
	t.Helper()
	resp, err := lab.EtcdClient().Get(context.Background(), "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var newest int64
	for _, kv := range resp.Kvs {
		if !strings.HasPrefix(string(kv.Key), "/registry/apiregistration.k8s.io/") {
			newest = max(newest, kv.ModRevision)
		}
	}
	return newest
}

func send(t *testing.T, lab *kubelabtest.Lab, method, path, contentType, body string) (int, status, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, lab.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st status
	if err := json.Unmarshal(b, &st); err != nil && resp.StatusCode >= 400 {
		t.Fatalf("%d %.300q is not a Status: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, st, resp.Header
}

func pod(name, labels string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":` + name + `,"labels":{` + labels + `}},"spec":{"containers":[{"name":"c","image":"i"}]}}`
}

func configMap(name, data string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"k":"` + data + `"}}`
}

func nested(depth int) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":{},"x":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

// copyBomb is a JSON patch whose copies double an annotation n times: 1 KiB
// becomes 2^n KiB.
func copyBomb(n int) string {
	ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"a0":"` + strings.Repeat("x", 1024) + `"}}`}
	for i := 1; i <= n; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/a%d"}`, i))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// TestHostileRequests: each hostile request gets exactly this Status, and
// etcd's revision does not move.
func TestHostileRequests(t *testing.T) {
	lab := kubelabtest.Start(t)
	for _, tc := range []struct {
		name, method, path, contentType, body string
		code                                  int
		reason, message                       string
	}{
		// Path traversal in names.
		{"ErrDotDotName", "GET", pods + "/..", "", "", 400, "BadRequest", `Name parameter invalid: "..": may not be '..'`},
		{"ErrDotDotNameCreate", "POST", pods, "application/json", pod(`".."`, ""), 422, "Invalid", `Pod ".." is invalid: metadata.name: Invalid value: ".."`},
		{"ErrEncodedSlashName", "GET", pods + "/a%2Fb", "", "", 404, "NotFound", "the server could not find the requested resource"},
		{"ErrEncodedDotDotNamespace", "GET", "/api/v1/namespaces/%2E%2E/pods", "", "", 400, "BadRequest", `Namespace parameter invalid: "..": may not be '..'`},
		{"ErrEncodedTraversalNamespace", "GET", "/api/v1/namespaces/..%2F..%2Fkube-system/pods", "", "", 404, "NotFound", "the server could not find the requested resource"},
		{"ErrSlashInBodyName", "POST", pods, "application/json", pod(`"a/../b"`, ""), 422, "Invalid", `Pod "a/../b" is invalid: metadata.name: Invalid value: "a/../b"`},
		{"ErrPercentInName", "DELETE", pods + "/a%25b", "", "", 400, "BadRequest", `Name parameter invalid: "a%b": may not contain '%'`},
		// Huge label values.
		{"ErrLabelValue64", "POST", pods, "application/json", pod(`"lbl"`, `"a":"`+strings.Repeat("v", 64)+`"`), 422, "Invalid", "metadata.labels: Invalid value: \"" + strings.Repeat("v", 64) + "\": must be no more than 63 bytes"},
		{"ErrLabelValue1MiB", "POST", pods, "application/json", pod(`"lbl"`, `"a":"`+strings.Repeat("v", 1<<20)+`"`), 422, "Invalid", "must be no more than 63 bytes"},
		{"ErrNestedJSONPatch", "PATCH", pods + "/ssa-demo", "application/json-patch+json", `[{"op":"add","path":"/metadata/annotations","value":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}]`, 400, "BadRequest", "the JSON patch could not be decoded: invalid character '[' exceeded max depth"},
		{"ErrNestedApply", "PATCH", pods + "/ssa-demo?fieldManager=x", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"Pod","x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, 400, "BadRequest", "error decoding YAML: yaml: exceeded max depth of 10000"},
		{"ErrJSONPatchCopyBomb", "PATCH", pods + "/ssa-demo", "application/json-patch+json", copyBomb(16), 422, "Invalid", "exceeding the limit 3145728"},
		{"ErrJSONPatchTooManyOps", "PATCH", pods + "/ssa-demo", "application/json-patch+json", "[" + strings.Repeat(`{"op":"test","path":"/kind","value":"Pod"},`, 10000) + `{"op":"test","path":"/kind","value":"Pod"}]`, 413, "RequestEntityTooLarge", "The allowed maximum operations in a JSON patch is 10000, got 10001"},
		{"ErrJSONPatchTestWholeDocument", "PATCH", pods + "/ssa-demo", "application/json-patch+json", `[{"op":"test","path":""}]`, 422, "Invalid", "the patch could not be applied"},
		{"ErrNestedLabelSelector", "GET", pods + "?labelSelector=" + strings.Repeat("(", 10000), "", "", 400, "BadRequest", "found '(', expected: !, identifier, or 'end of string'"},
		{"ErrHugeLabelSelector", "GET", pods + "?labelSelector=a%3D" + strings.Repeat("v", 1<<16), "", "", 400, "BadRequest", "unable to parse requirement: values[0][a]: Invalid value"},
		// Deeply nested JSON.
		{"ErrNested10000", "POST", configmaps, "application/json", nested(10000), 400, "BadRequest", "json parse error: invalid character '[' exceeded max depth"},
		{"ErrNested100000", "POST", configmaps, "application/json", nested(100000), 400, "BadRequest", "json parse error: invalid character '[' exceeded max depth"},
		{"ErrNestedYAML", "POST", configmaps, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\nx: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", 400, "BadRequest", "json parse error: invalid character '[' exceeded max depth"},
		{"ErrNestedPatch", "PATCH", pods + "/ssa-demo", "application/merge-patch+json", `{"x":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat("}", 10000) + `}`, 422, "Invalid", "Invalid JSON Patch"},
		// Unicode tricks in names.
		{"ErrRTLOverrideName", "POST", pods, "application/json", pod(`"abc\u202edef"`, ""), 422, "Invalid", "metadata.name: Invalid value: \"abc\\u202edef\": a lowercase RFC 1123 subdomain"},
		{"ErrHomoglyphName", "POST", pods, "application/json", pod(`"ssа-demo"`, ""), 422, "Invalid", "metadata.name: Invalid value: \"ssа-demo\": a lowercase RFC 1123 subdomain"},
		{"ErrNULName", "POST", pods, "application/json", pod(`"a\u0000b"`, ""), 422, "Invalid", "metadata.name: Invalid value: \"a\\x00b\": a lowercase RFC 1123 subdomain"},
		{"ErrNULInPath", "GET", pods + "/a%00b", "", "", 404, "NotFound", "pods \"a\\x00b\" not found"},
		{"ErrRTLOverrideInPath", "GET", pods + "/%E2%80%AEabc", "", "", 404, "NotFound", "pods \"\\u202eabc\" not found"},
		// Wrong content types.
		{"ErrTextPlain", "POST", pods, "text/plain", pod(`"ct"`, ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{"ErrXML", "POST", pods, "application/xml", "<pod/>", 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{"ErrMalformedContentType", "POST", pods, "application/json; charset", pod(`"ct"`, ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{"ErrJSONAsProtobuf", "POST", pods, "application/vnd.kubernetes.protobuf", pod(`"ct"`, ""), 400, "BadRequest", "provided data does not appear to be a protobuf message"},
		{"ErrMergePatchAsCreate", "POST", pods, "application/merge-patch+json", pod(`"ct"`, ""), 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		// Duplicate JSON fields.
		{"ErrDuplicateFieldStrict", "POST", pods + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dup","name":"dup2"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "BadRequest", "strict decoding error: duplicate field \"metadata.name\""},
		{"ErrDuplicateKind", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","kind":"ConfigMap","metadata":{"name":"dup"}}`, 400, "BadRequest", "the kind in the data (ConfigMap) does not match the expected kind (Pod)"},
		// Sizes.
		{"ErrBodyOver3MiB", "POST", configmaps, "application/json", configMap("big", strings.Repeat("a", 3<<20)), 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"},
		{"ErrObjectOver1.5MiB", "POST", configmaps, "application/json", configMap("big", strings.Repeat("a", 2<<20)), 413, "RequestEntityTooLarge", "etcd takes at most 1572864"},
		{"ErrObjectOver1.5MiBAsYAML", "POST", configmaps, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {k: " + strings.Repeat("a", 2<<20) + "}\n", 413, "RequestEntityTooLarge", "etcd takes at most 1572864"},
		// Numbers too big.
		{"ErrGenerationOverInt64", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"num","generation":99999999999999999999},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "BadRequest", "json: cannot unmarshal number 99999999999999999999 into Go struct field ObjectMeta.metadata.generation of type int64"},
		{"ErrPortOverInt32", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"num"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":4294967296}]}]}}`, 400, "BadRequest", "cannot unmarshal number 4294967296 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"},
		{"ErrGracePeriodFloat", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"num"},"spec":{"terminationGracePeriodSeconds":1e400,"containers":[{"name":"c","image":"i"}]}}`, 400, "BadRequest", "cannot unmarshal number 1e400 into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"},
		{"ErrLimitOverInt64", "GET", pods + "?limit=99999999999999999999", "", "", 400, "BadRequest", "limit must be a non-negative integer: \"99999999999999999999\""},
		{"ErrResourceVersionOverInt64", "GET", pods + "?resourceVersion=99999999999999999999", "", "", 400, "BadRequest", "invalid resource version: \"99999999999999999999\""},
		{"ErrTimeoutOverflow", "GET", pods + "?watch=1&timeoutSeconds=9223372036854775807&resourceVersion=99999999999999999999", "", "", 400, "BadRequest", "invalid resource version: \"99999999999999999999\""},
		// Invalid UTF-8.
		{"ErrInvalidUTF8Name", "POST", pods, "application/json", pod("\"a\xffb\"", ""), 422, "Invalid", "metadata.name: Invalid value: \"a\ufffdb\""},
		{"ErrInvalidUTF8Label", "POST", pods, "application/json", pod(`"utf"`, "\"a\":\"\xc3\x28\""), 422, "Invalid", "metadata.labels: Invalid value: \"\ufffd(\""},
		{"ErrInvalidUTF8YAML", "POST", pods, "application/yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"\xfe\xff\"\n", 400, "BadRequest", "yaml: invalid leading UTF-8 octet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := etcdRevision(t, lab)
			code, st, _ := send(t, lab, tc.method, tc.path, tc.contentType, tc.body)
			after := etcdRevision(t, lab)
			t.Logf("%d %s %.200q (rev %d -> %d)", code, st.Reason, st.Message, before, after)
			if code != tc.code || st.Code != tc.code || st.Kind != "Status" || st.Reason != tc.reason || !strings.Contains(st.Message, tc.message) {
				t.Errorf("got %d %s %q, want %d %s %q", code, st.Reason, st.Message, tc.code, tc.reason, tc.message)
			}
			if after != before {
				t.Errorf("etcd's revision moved from %d to %d: the request wrote something", before, after)
			}
		})
	}
}

// TestObjectNearTheLimit: an object whose encoded size is within
// MaxObjectBytes but whose etcd request, with its key and framing, is over
// etcd's limit still gets a 413 and writes nothing.
func TestObjectNearTheLimit(t *testing.T) {
	lab := kubelabtest.Start(t)
	// A ConfigMap named "near" with one key encodes to its value and 213 bytes.
	for _, n := range []int{(3 << 19) - 213, (3 << 19) - 260} {
		before := etcdRevision(t, lab)
		code, st, _ := send(t, lab, "POST", configmaps, "application/json", configMap("near", strings.Repeat("a", n)))
		if after := etcdRevision(t, lab); code != 413 || st.Reason != "RequestEntityTooLarge" || !strings.Contains(st.Message, "etcdserver: request is too large") || after != before {
			t.Errorf("%d bytes: %d %s %q, revision %d -> %d; want 413 RequestEntityTooLarge and no write", n, code, st.Reason, st.Message, before, after)
		}
	}
}
