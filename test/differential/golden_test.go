package differential

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Golden rows: answers recorded once from the real kube-apiserver v1.37.2
// and kept in goldenFile, so that CI compares kubelab with kube without
// building and starting the reference. TestGolden checks kubelab's kube
// core (--apiserver=kube) against them, and reports kubelab's own core.
//
// To record them again, outside CI, with the reference running
// (cluster.sh start, which prints REF_DIR):
//
//	REF_DIR=... go test -run TestGolden -update .
var update = flag.Bool("update", false, "record the golden rows from the reference kube-apiserver (REF_DIR) instead of checking kubelab")

const goldenFile = "testdata/golden.json"

// goldenRow is one question asked of an API server, and what it answered,
// one observation per line ("label: value"), with nothing in it that
// differs between two correct servers (no resourceVersions, no times).
type goldenRow struct {
	name string
	run  func(t *testing.T, c *client) []string
}

var goldenRows = []goldenRow{
	{"limit is ignored when resourceVersion=0", func(t *testing.T, c *client) []string {
		code, o := c.call(t, "GET", "/api/v1/namespaces?limit=1&resourceVersion=0", "")
		return []string{
			fmt.Sprintf("code: %d", code),
			fmt.Sprintf("more items than the limit: %t", len(o.Items) > 1),
			fmt.Sprintf("continue token: %t", o.Metadata.Continue != ""),
		}
	}},
	{"a watch from a future resourceVersion", func(t *testing.T, c *client) []string {
		_, list := c.call(t, "GET", "/api/v1/namespaces/default/configmaps", "")
		future := list.rv(t) + 1_000_000
		code, first := c.firstEvent(t, fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%d&timeoutSeconds=%d", future, futureWatchSeconds))
		return []string{fmt.Sprintf("code: %d", code), "first event: " + first}
	}},
	{"resourceVersionMatch without resourceVersion", func(t *testing.T, c *client) []string {
		return c.answer(t, "GET", "/api/v1/namespaces?resourceVersionMatch=NotOlderThan", "")
	}},
	{"DELETE of the namespaces collection", func(t *testing.T, c *client) []string {
		return c.answer(t, "DELETE", "/api/v1/namespaces", "")
	}},
	{"a ValidatingAdmissionPolicy denies a create", deniedByPolicy},
	{"a Pod watch's BOOKMARK", func(t *testing.T, c *client) []string {
		return c.bookmark(t, "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30")
	}},
	{"a CRD as etcd stores it", func(t *testing.T, c *client) []string {
		return c.stored(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "goldens.lab.example.com",
			`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"goldens.lab.example.com"},
			"spec":{"group":"lab.example.com","names":{"kind":"Golden","plural":"goldens","singular":"golden"},"scope":"Namespaced",
			"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
			"/registry/apiextensions.k8s.io/customresourcedefinitions/goldens.lab.example.com")
	}},
	{"an APIService as etcd stores it", func(t *testing.T, c *client) []string {
		return c.stored(t, "/apis/apiregistration.k8s.io/v1/apiservices", "v1alpha1.golden.example.com",
			`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1alpha1.golden.example.com"},
			"spec":{"group":"golden.example.com","version":"v1alpha1","groupPriorityMinimum":1000,"versionPriority":15,
			"service":{"namespace":"default","name":"golden","port":443},"insecureSkipTLSVerify":true}}`,
			"/registry/apiregistration.k8s.io/apiservices/v1alpha1.golden.example.com")
	}},
	{"metrics.k8s.io with no metrics server", func(t *testing.T, c *client) []string {
		return append(c.answer(t, "GET", "/apis/metrics.k8s.io/v1beta1", ""), c.answer(t, "GET", "/apis/metrics.k8s.io/v1beta1/pods", "")...)
	}},
}

// bookmark opens a watch and describes its first BOOKMARK: the fields of
// its object, with the spec and status it carries.
func (c *client) bookmark(t *testing.T, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := c.do(ctx, "GET", path, "")
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return []string{fmt.Sprintf("code: %d", resp.StatusCode), "body: " + withoutNumbers(strings.TrimSpace(string(data)))}
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string
			Object map[string]json.RawMessage
		}
		if err := dec.Decode(&ev); err != nil {
			return []string{"code: 200", "no BOOKMARK: " + err.Error()}
		}
		if ev.Type != "BOOKMARK" {
			continue
		}
		var fields []string
		for k := range ev.Object {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		var meta struct {
			Annotations map[string]string
		}
		_ = json.Unmarshal(ev.Object["metadata"], &meta)
		return []string{
			"code: 200",
			"fields: " + strings.Join(fields, " "),
			"spec: " + string(ev.Object["spec"]),
			"status: " + string(ev.Object["status"]),
			"annotations: " + fmt.Sprint(meta.Annotations),
		}
	}
}

// stored creates an object, and says how etcd stores it: as JSON or as
// protobuf (kube's "k8s\x00" envelope). The object is deleted after.
func (c *client) stored(t *testing.T, collection, name, body, key string) []string {
	t.Helper()
	if code, st := c.call(t, "POST", collection, body); code != http.StatusCreated {
		return []string{fmt.Sprintf("POST %s: %d %s", collection, code, st.Message)}
	}
	t.Cleanup(func() { c.call(t, "DELETE", collection+"/"+name, "") })
	out, err := exec.Command(etcdctlBinary(t), "--endpoints", c.etcd, "get", key, "--print-value-only").Output()
	if err != nil {
		t.Fatalf("etcdctl get %s: %v", key, err)
	}
	switch {
	case bytes.HasPrefix(out, []byte("k8s\x00")):
		return []string{"stored as: protobuf"}
	case bytes.HasPrefix(out, []byte("{")):
		return []string{"stored as: JSON"}
	case len(out) == 0:
		return []string{"stored as: nothing under " + key}
	}
	return []string{fmt.Sprintf("stored as: %q...", out[:min(len(out), 8)])}
}

// etcdctlBinary is the real etcdctl: the reference's (ETCDCTL), or the
// one .ci/run builds (KUBELAB_ETCDCTL).
func etcdctlBinary(t *testing.T) string {
	for _, v := range []string{"ETCDCTL", "KUBELAB_ETCDCTL"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	t.Fatal("neither ETCDCTL nor KUBELAB_ETCDCTL names an etcdctl")
	return ""
}

// deniedByPolicy makes a ValidatingAdmissionPolicy that refuses config
// maps labelled golden=deny, and its binding, and creates one such config
// map until the policy takes effect (kube compiles it in the background):
// the answer is the denial.
func deniedByPolicy(t *testing.T, c *client) []string {
	const vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	const bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	policy := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"golden-deny"},
		"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"!has(object.metadata.labels) || object.metadata.labels[?'golden'].orValue('') != 'deny'","message":"config maps labelled golden=deny are refused"}]}}`
	binding := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"golden-deny-binding"},
		"spec":{"policyName":"golden-deny","validationActions":["Deny"]}}`
	for _, o := range []struct{ path, body string }{{vap, policy}, {bindings, binding}} {
		if code, st := c.call(t, "POST", o.path, o.body); code != http.StatusCreated {
			// Not served, say: that is the answer.
			return []string{fmt.Sprintf("POST %s: %d %s", o.path, code, st.Message)}
		}
	}
	t.Cleanup(func() {
		c.call(t, "DELETE", bindings+"/golden-deny-binding", "")
		c.call(t, "DELETE", vap+"/golden-deny", "")
	})
	const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"golden-denied","labels":{"golden":"deny"}}}`
	deadline := time.Now().Add(60 * time.Second)
	for {
		answer := c.answer(t, "POST", "/api/v1/namespaces/default/configmaps", cm)
		if answer[0] != "code: 201" {
			return answer
		}
		// Created before the policy took effect: undo, and try again.
		c.call(t, "DELETE", "/api/v1/namespaces/default/configmaps/golden-denied", "")
		if time.Now().After(deadline) {
			t.Fatal("the policy denied nothing within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// futureWatchSeconds is the watch's own timeout: long past kube's wait for
// a resourceVersion its cache has not seen (3 s), so that what kube does
// then is what is recorded.
const futureWatchSeconds = 15

// differsOnKubelabCore are the rows kubelab's own core answers unlike
// kube, and why. They are not fixed there: the kube core replaces it.
var differsOnKubelabCore = map[string]string{
	"limit is ignored when resourceVersion=0":      "kubelab's core pages a list at resourceVersion=0 (limit and continue), where kube's watch cache serves it whole",
	"a watch from a future resourceVersion":        "kubelab's core refuses a watch from a resourceVersion its cache has not reached with 504, where kube accepts it and waits",
	"resourceVersionMatch without resourceVersion": "kubelab's core answers 400 BadRequest, where kube's validation of ListOptions answers 422 Invalid",
	"DELETE of the namespaces collection":          "kubelab's core serves deletecollection of namespaces, where kube's namespace storage has no such verb (405)",
	"a ValidatingAdmissionPolicy denies a create":  "kubelab's core does not serve ValidatingAdmissionPolicies (404)",
	"a Pod watch's BOOKMARK":                       "kubelab's core sends a bookmark with metadata only, where kube's encodes an empty Pod, spec and status included",
	"a CRD as etcd stores it":                      "kubelab's core stores CRDs as protobuf, where kube stores them as JSON (apiextensions has no protobuf)",
	"an APIService as etcd stores it":              "kubelab's core stores APIServices as protobuf, where kube stores them as JSON",
	"metrics.k8s.io with no metrics server":        "kubelab's core serves a metrics API of its own (namespacemetrics), where kube serves none without a metrics server",
}

func TestGolden(t *testing.T) {
	if *update {
		recordGolden(t)
		return
	}
	want := readGolden(t)
	bin := os.Getenv("KUBELAB_BINARY")
	if bin == "" {
		t.Fatal("KUBELAB_BINARY is not set: build ./cmd/kubelab and name it there")
	}
	for _, core := range []string{"kube", "kubelab"} {
		t.Run(core, func(t *testing.T) {
			c := startCore(t, bin, core)
			for _, row := range goldenRows {
				got := strings.Join(row.run(t, c), "\n")
				w := strings.Join(want[row.name], "\n")
				switch {
				case got == w:
				case core == "kube":
					t.Errorf("%s:\nkube-apiserver v1.37.2 answered:\n%s\nthe kube core answered:\n%s", row.name, w, got)
				case differsOnKubelabCore[row.name] != "":
					t.Logf("%s: differs on kubelab's own core, as known (%s):\n%s", row.name, differsOnKubelabCore[row.name], got)
				default:
					t.Errorf("%s: kubelab's own core answers unlike kube-apiserver v1.37.2, and differsOnKubelabCore does not say why:\nkube:\n%s\nkubelab:\n%s", row.name, w, got)
				}
			}
		})
	}
}

func readGolden(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var rows map[string][]string
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("%s: %v", goldenFile, err)
	}
	for _, row := range goldenRows {
		if _, ok := rows[row.name]; !ok {
			t.Fatalf("%s has no answer for %q: record it with -update", goldenFile, row.name)
		}
	}
	return rows
}

// recordGolden asks the reference every row and writes its answers.
func recordGolden(t *testing.T) {
	if os.Getenv("CI") != "" {
		t.Fatal("-update records from the reference kube-apiserver, which CI does not run")
	}
	dir := os.Getenv("REF_DIR")
	if dir == "" {
		t.Fatal("-update needs REF_DIR, the reference's state directory (cluster.sh start prints it)")
	}
	c := newClient(t, filepath.Join(dir, "kubeconfig"))
	c.etcd = (&kubeServer{}).Etcd()
	rows := map[string][]string{}
	for _, row := range goldenRows {
		rows[row.name] = row.run(t, c)
	}
	data, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d rows into %s", len(rows), goldenFile)
}

// startCore runs kubelab with the given core over its embedded etcd, and
// returns a client of its admin kubeconfig; the test's cleanup stops it.
func startCore(t *testing.T, bin, core string) *client {
	t.Helper()
	dir := t.TempDir()
	port, etcd := freePort(t), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "--apiserver="+core, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir,
		"--etcd-listen-client", etcd, "--log-level", "warn", "--simulated-node=false")
	log, err := os.Create(filepath.Join(dir, "kubelab.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(dir, "kubelab.log"))
			t.Logf("kubelab --apiserver=%s's output:\n%s", core, out)
		}
	})
	waitReady(t, fmt.Sprintf("http://127.0.0.1:%d/readyz", port), http.DefaultClient)
	c := newClient(t, filepath.Join(dir, "kubeconfig"))
	c.etcd = "http://" + etcd
	return c
}

// answer is a request's status code, and the reason and message of the
// Status it answered with (or its body, if it is not one, or only the code
// if it created something).
func (c *client) answer(t *testing.T, method, path, body string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusCreated {
		return []string{"code: 201"}
	}
	var o object
	if err := json.Unmarshal(data, &o); err != nil || o.Kind != "Status" {
		return []string{fmt.Sprintf("code: %d", resp.StatusCode), "body: " + strings.TrimSpace(string(data))}
	}
	return []string{fmt.Sprintf("code: %d", resp.StatusCode), "reason: " + o.Reason, "message: " + withoutNumbers(o.Message)}
}

// withoutNumbers replaces each number of three digits or more in a message
// with N: a message may name resourceVersions, which differ between two
// servers.
func withoutNumbers(msg string) string { return digits.ReplaceAllString(msg, "N") }

var digits = regexp.MustCompile(`[0-9]{3,}`)

// firstEvent opens a watch and describes what came first: an event's type
// (and an error's code, reason and message), or the end of the stream.
func (c *client) firstEvent(t *testing.T, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(futureWatchSeconds+30)*time.Second)
	defer cancel()
	resp, err := c.do(ctx, "GET", path, "")
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var ev event
	if err := dec.Decode(&ev); err != nil {
		if err == io.EOF {
			return resp.StatusCode, "none: the stream ended"
		}
		return resp.StatusCode, "unreadable: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		// Not a stream: the answer is a Status.
		return resp.StatusCode, "none"
	}
	if ev.Type == "ERROR" {
		return resp.StatusCode, fmt.Sprintf("ERROR %d %s: %s", ev.Object.Code, ev.Object.Reason, withoutNumbers(ev.Object.Message))
	}
	return resp.StatusCode, ev.Type
}
