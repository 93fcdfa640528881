package kubeapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// kubectl runs the real kubectl against lab with its admin kubeconfig.
func kubectl(t *testing.T, lab served, args ...string) string {
	t.Helper()
	out, stderr, err := clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", lab.KubeconfigPath()}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// kubectlFails runs kubectl expecting it to fail, and returns its stderr.
func kubectlFails(t *testing.T, lab served, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := clitest.RunWith(t, clitest.Options{Stdin: stdin}, clitest.Kubectl(t), append([]string{"--kubeconfig", lab.KubeconfigPath()}, args...)...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded: %s", strings.Join(args, " "), out)
	}
	return stderr
}

func kubectlIn(t *testing.T, lab served, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := clitest.RunWith(t, clitest.Options{Stdin: stdin}, clitest.Kubectl(t), append([]string{"--kubeconfig", lab.KubeconfigPath()}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// watchEvent is one line of a raw watch stream.
type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

func (e watchEvent) meta(field string) string {
	m, _ := e.Object["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

func parseEvents(t *testing.T, stream string) []watchEvent {
	t.Helper()
	var events []watchEvent
	dec := json.NewDecoder(strings.NewReader(stream))
	for dec.More() {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch stream: %v\n%s", err, stream)
		}
		events = append(events, ev)
	}
	return events
}

var demoPods = []string{"gc-demo4-54cd5f4cd9-7jhlq", "gc-demo4-54cd5f4cd9-lddmh", "ssa-atomic-demo-864644447-lg556",
	"ssa-demo", "ssa-merge-demo-78fd5b47c4-9pk7t", "web-86d8686cfb-84dk9"}

func testKubectlGetPodsTable(t *testing.T, lab *apitest.Server) {
	out := kubectl(t, lab, "get", "pods", "-n", "internals-demo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !regexp.MustCompile(`^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$`).MatchString(lines[0]) {
		t.Fatalf("header %q", lines[0])
	}
	if len(lines) != 1+len(demoPods) {
		t.Fatalf("got %d rows:\n%s", len(lines)-1, out)
	}
	for i, name := range demoPods {
		if !regexp.MustCompile(`^` + name + `\s+0/1\s+Pending\s+0\s+\d+s$`).MatchString(lines[i+1]) {
			t.Errorf("row %q", lines[i+1])
		}
	}
	wide := kubectl(t, lab, "get", "pods", "-n", "internals-demo", "-o", "wide")
	if !strings.Contains(strings.Split(wide, "\n")[0], "NOMINATED NODE") {
		t.Errorf("-o wide header: %s", strings.Split(wide, "\n")[0])
	}
}

// TestListResourceVersionIsEtcdRevision: the list's resourceVersion is
// etcd's revision at the read. (kubectl -o json wraps items in a List of
// its own with an empty resourceVersion, on a real cluster too, so the raw
// list is where the lesson's number shows.)
func TestListResourceVersionIsEtcdRevision(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
		Items    []json.RawMessage                `json:"items"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, lab, "get", "--raw", "/api/v1/namespaces/internals-demo/pods")), &list); err != nil {
		t.Fatal(err)
	}
	out, _, err := clitest.Run(t, clitest.Etcdctl(t), "--endpoints", lab.EtcdURL(), "endpoint", "status", "-w", "json")
	if err != nil {
		t.Fatal(err)
	}
	var status []struct {
		Status struct {
			Header struct{ Revision int64 } `json:"header"`
		} `json:"Status"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil || len(status) != 1 {
		t.Fatalf("etcdctl endpoint status: %v %s", err, out)
	}
	if list.Metadata.ResourceVersion != strconv.FormatInt(status[0].Status.Header.Revision, 10) || len(list.Items) != len(demoPods) {
		t.Fatalf("list rv %s with %d items, etcd revision %d", list.Metadata.ResourceVersion, len(list.Items), status[0].Status.Header.Revision)
	}
	var printed map[string]any
	if err := json.Unmarshal([]byte(kubectl(t, lab, "-n", "internals-demo", "get", "pods", "-o", "json")), &printed); err != nil {
		t.Fatal(err)
	}
	if items := printed["items"].([]any); len(items) != len(demoPods) {
		t.Fatalf("kubectl -o json printed %d items", len(items))
	}
}

// TestKubectlWatchSeesLabelAsModified is the lesson's two terminals.
func TestKubectlWatchSeesLabelAsModified(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Kubectl(t), "--kubeconfig", lab.KubeconfigPath(),
		"-n", "internals-demo", "get", "pods", "--watch", "--output-watch-events", "-o", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	events := make(chan watchEvent)
	go func() {
		dec := json.NewDecoder(bufio.NewReader(stdout))
		for {
			var ev watchEvent
			if dec.Decode(&ev) != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()
	nextEvent := func() watchEvent {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("kubectl watch ended: %s", stderr.String())
			}
			return ev
		case <-ctx.Done():
			t.Fatalf("no event from kubectl watch: %s", stderr.String())
		}
		return watchEvent{}
	}
	maxRV := 0
	for _, name := range demoPods {
		ev := nextEvent()
		if ev.Type != "ADDED" || ev.meta("name") != name {
			t.Fatalf("got %s %s, want ADDED %s", ev.Type, ev.meta("name"), name)
		}
		rv, _ := strconv.Atoi(ev.meta("resourceVersion"))
		maxRV = max(maxRV, rv)
	}
	if out := kubectl(t, lab, "-n", "internals-demo", "label", "pod", "ssa-demo", "demo-round=one", "--overwrite"); strings.TrimSpace(out) != "pod/ssa-demo labeled" {
		t.Fatalf("label printed %q", out)
	}
	ev := nextEvent()
	rv, _ := strconv.Atoi(ev.meta("resourceVersion"))
	if ev.Type != "MODIFIED" || ev.meta("name") != "ssa-demo" || rv <= maxRV {
		t.Fatalf("got %s %s rv=%d, want MODIFIED ssa-demo after rv %d", ev.Type, ev.meta("name"), rv, maxRV)
	}
	labels := ev.Object["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["demo-round"] != "one" {
		t.Fatalf("labels %v", labels)
	}
}

// TestRawWatchWithBookmarks is the lesson's allowWatchBookmarks call. As
// kube-apiserver 1.37 defaults a watch from "" to sendInitialEvents=true,
// the ADDED events end at once with a BOOKMARK that carries only a
// resourceVersion and the k8s.io/initial-events-end annotation; anything
// after it is a later change (a pod the simulated node is still starting)
// or a plain bookmark for it.
func TestRawWatchWithBookmarks(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	start := time.Now()
	events := parseEvents(t, kubectl(t, lab, "get", "--raw", "/api/v1/namespaces/internals-demo/pods?watch=1&resourceVersion=&timeoutSeconds=6&allowWatchBookmarks=true"))
	if d := time.Since(start); d < 5*time.Second || d > 12*time.Second {
		t.Errorf("watch lasted %v, want about timeoutSeconds=6", d)
	}
	if len(events) < len(demoPods)+1 {
		t.Fatalf("got %d events, want %d ADDED and a BOOKMARK", len(events), len(demoPods))
	}
	for _, ev := range events[:len(demoPods)] {
		if ev.Type != "ADDED" || ev.Object["kind"] != "Pod" {
			t.Fatalf("got %s %v", ev.Type, ev.Object["kind"])
		}
	}
	bm := events[len(demoPods)]
	raw, _ := json.Marshal(bm.Object)
	want := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"%s"}}`, bm.meta("resourceVersion"))
	if bm.Type != "BOOKMARK" || string(raw) != want || bm.meta("resourceVersion") == "" {
		t.Fatalf("bookmark %s %s, want %s", bm.Type, raw, want)
	}
	for _, ev := range events[len(demoPods)+1:] {
		if ev.Type != "MODIFIED" && (ev.Type != "BOOKMARK" || ev.Object["metadata"].(map[string]any)["annotations"] != nil) {
			t.Fatalf("after the initial events: %s %v", ev.Type, ev.Object["metadata"])
		}
	}
}

// TestWatchFromOneIsGone is the lesson's 410, word for word, for
// kube-apiserver's reason: resourceVersion 1 is older than the pods' watch
// cache, whose window starts at the revision it listed at; compacting etcd
// does not move it. On a whole kubelab, as on a real cluster: its cache
// lists after the server's own first writes (its CA, the bootstrap
// policy); the API alone lists an empty etcd at revision 1.
func TestWatchFromOneIsGone(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	podStore, _ := lab.API().Store(corev1.SchemeGroupVersion.WithResource("pods"))
	listed := podStore.Cache().OldestResourceVersion()
	rev, err := lab.EtcdCompactor().CompactNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listed >= rev-1 {
		t.Fatalf("the pods' cache listed at %d, not before the compaction at %d: nothing to tell apart", listed, rev)
	}
	out := kubectl(t, lab, "get", "--raw", "/api/v1/namespaces/internals-demo/pods?watch=1&resourceVersion=1&timeoutSeconds=6")
	want := fmt.Sprintf(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (%d)","reason":"Expired","code":410}}`, listed)
	if strings.TrimSpace(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}

// testEtcdctlShowsKubernetesProtobuf reads the lesson's key with the real etcdctl.
func testEtcdctlShowsKubernetesProtobuf(t *testing.T, lab *apitest.Server) {
	out, stderr, err := clitest.Run(t, clitest.Etcdctl(t), "--endpoints", lab.EtcdURL(), "get", "/registry/pods/internals-demo/ssa-demo")
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	key, value, _ := strings.Cut(out, "\n")
	if key != "/registry/pods/internals-demo/ssa-demo" || !strings.HasPrefix(value, "k8s\x00") {
		t.Fatalf("etcdctl printed %q", out[:min(len(out), 80)])
	}
	for _, want := range []string{"v1", "Pod", "ssa-demo", "internals-demo", "manager-a", "Apply", `{"f:metadata":`, `"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}}}`} {
		if !strings.Contains(value, want) {
			t.Errorf("raw value lacks %q", want)
		}
	}
}

func testKubectlDiscovery(t *testing.T, lab *apitest.Server) {
	var groups struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, lab, "get", "--raw", "/apis")), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups.Groups) == 0 || groups.Groups[0].Name != "rbac.authorization.k8s.io" {
		t.Fatalf("groups %+v", groups)
	}
	out := kubectl(t, lab, "api-resources")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^pods\s+po\s+v1\s+true\s+Pod$`),
		regexp.MustCompile(`(?m)^namespaces\s+ns\s+v1\s+false\s+Namespace$`),
		regexp.MustCompile(`(?m)^roles\s+rbac.authorization.k8s.io/v1\s+true\s+Role$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("api-resources lacks %s:\n%s", want, out)
		}
	}
	if out := kubectl(t, lab, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "v1.37.2+kubelab"`) {
		t.Errorf("version: %s", out)
	}
}

func TestKubectlWrites(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	dir := t.TempDir()
	manifest := func(image string) string {
		p := filepath.Join(dir, "pod.yaml")
		os.WriteFile(p, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: applied\n  namespace: internals-demo\nspec:\n  containers:\n  - name: main\n    image: "+image+"\n"), 0o600)
		return p
	}
	t.Run("ClientSideApplyTwice", func(t *testing.T) {
		if out := kubectl(t, lab, "apply", "-f", manifest("nginx:1.27")); strings.TrimSpace(out) != "pod/applied created" {
			t.Fatalf("first apply: %q", out)
		}
		if out := kubectl(t, lab, "apply", "-f", manifest("nginx:1.28")); strings.TrimSpace(out) != "pod/applied configured" {
			t.Fatalf("second apply: %q", out)
		}
		if out := kubectl(t, lab, "-n", "internals-demo", "get", "pod", "applied", "-o", "jsonpath={.spec.containers[0].image}"); out != "nginx:1.28" {
			t.Fatalf("image %q", out)
		}
		if out := kubectl(t, lab, "apply", "-f", manifest("nginx:1.28")); strings.TrimSpace(out) != "pod/applied unchanged" {
			t.Fatalf("third apply: %q", out)
		}
	})
	t.Run("ServerSideApplyConflict", func(t *testing.T) {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: internals-demo\ndata:\n  color: %s\n"
		if out := kubectlIn(t, lab, fmt.Sprintf(cm, "blue"), "apply", "--server-side", "--field-manager", "alice", "-f", "-"); strings.TrimSpace(out) != "configmap/shared serverside-applied" {
			t.Fatalf("alice: %q", out)
		}
		stderr := kubectlFails(t, lab, fmt.Sprintf(cm, "red"), "apply", "--server-side", "--field-manager", "bob", "-f", "-")
		if !strings.Contains(stderr, `conflict with "alice"`) || !strings.Contains(stderr, ".data.color") {
			t.Fatalf("bob's conflict: %s", stderr)
		}
		kubectlIn(t, lab, fmt.Sprintf(cm, "red"), "apply", "--server-side", "--field-manager", "bob", "--force-conflicts", "-f", "-")
		out := kubectl(t, lab, "-n", "internals-demo", "get", "configmap", "shared", "-o", "json", "--show-managed-fields")
		if !strings.Contains(out, `"color": "red"`) || !strings.Contains(out, `"manager": "bob"`) || !strings.Contains(out, `"operation": "Apply"`) {
			t.Fatalf("after force: %s", out)
		}
	})
	t.Run("CreateConfigMap", func(t *testing.T) {
		if out := kubectl(t, lab, "-n", "internals-demo", "create", "configmap", "settings", "--from-literal=mode=lab"); strings.TrimSpace(out) != "configmap/settings created" {
			t.Fatalf("%q", out)
		}
		stderr := kubectlFails(t, lab, "", "-n", "internals-demo", "create", "configmap", "settings", "--from-literal=mode=lab")
		if !strings.Contains(stderr, `configmaps "settings" already exists`) {
			t.Fatalf("second create: %s", stderr)
		}
	})
	t.Run("PatchAllThreeTypes", func(t *testing.T) {
		for _, p := range []struct{ typ, patch, want string }{
			{"strategic", `{"data":{"a":"1"}}`, `"a":"1"`},
			{"merge", `{"data":{"b":"2"}}`, `"b":"2"`},
			{"json", `[{"op":"add","path":"/data/c","value":"3"}]`, `"c":"3"`},
		} {
			if out := kubectl(t, lab, "-n", "internals-demo", "patch", "configmap", "settings", "--type", p.typ, "-p", p.patch); strings.TrimSpace(out) != "configmap/settings patched" {
				t.Fatalf("%s patch: %q", p.typ, out)
			}
			if out := kubectl(t, lab, "-n", "internals-demo", "get", "configmap", "settings", "-o", "jsonpath={.data}"); !strings.Contains(out, p.want) {
				t.Fatalf("after %s patch: %s", p.typ, out)
			}
		}
		stderr := kubectlFails(t, lab, "", "-n", "internals-demo", "patch", "configmap", "settings", "--type", "json", "-p", `[{"op":"remove","path":"/data/nope"}]`)
		if !strings.Contains(stderr, `The ConfigMap "settings" is invalid: patch: Invalid value`) || !strings.Contains(stderr, "nonexistent key") {
			t.Fatalf("bad json patch: %s", stderr)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		if out := kubectl(t, lab, "-n", "internals-demo", "delete", "configmap", "settings"); strings.TrimSpace(out) != `configmap "settings" deleted from internals-demo namespace` {
			t.Fatalf("%q", out)
		}
		stderr := kubectlFails(t, lab, "", "-n", "internals-demo", "get", "configmap", "settings")
		if !strings.Contains(stderr, `configmaps "settings" not found`) {
			t.Fatalf("%s", stderr)
		}
	})
}

// testKubectlOpenAPI: the lesson's /openapi/v3 paths, and kubectl explain
// reading field descriptions from them.
func testKubectlOpenAPI(t *testing.T, lab *apitest.Server) {
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, lab, "get", "--raw", "/openapi/v3")), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"api", "api/v1", "apis", "apis/rbac.authorization.k8s.io", "apis/rbac.authorization.k8s.io/v1", "version"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("/openapi/v3 lacks %q: %v", p, doc.Paths)
		}
	}
	out := kubectl(t, lab, "explain", "pod.spec.containers")
	for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "List of containers belonging to the pod."} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}

// testKubectlAuthCanI: kubectl auth can-i asks the authorizer that enforces.
func testKubectlAuthCanI(t *testing.T, lab *apitest.Server) {
	if out := strings.TrimSpace(kubectl(t, lab, "auth", "can-i", "list", "pods", "-n", "internals-demo")); out != "yes" {
		t.Fatalf("can-i list pods: %q", out)
	}
	if out := kubectl(t, lab, "auth", "can-i", "--list", "-n", "internals-demo"); !strings.Contains(out, "*.*") {
		t.Fatalf("can-i --list: %s", out)
	}
}
