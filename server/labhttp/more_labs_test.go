package labhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

// windowFreshness shortens kube's 75 s, the age an event must reach before
// a full watch cache window drops it, so that the gone lab runs quickly.
const windowFreshness = time.Second

// Labs 2, 3, 5 and 6 with the real kubectl and etcdctl, as a student.
func TestMoreLabsWithKubectlAndEtcdctl(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode, func(c *server.Config) { c.WatchCacheEventFreshness = windowFreshness })
	alice := student(t, lab, "alice")
	ns := alice.name
	kubectl := func(args ...string) string {
		t.Helper()
		out, stderr, err := alice.kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v %s", args, err, stderr)
		}
		return out
	}

	t.Run("OK bookmarks and resuming", func(t *testing.T) {
		alice.start("bookmarks")
		var list struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(kubectl("get", "--raw", "/api/v1/namespaces/"+ns+"/pods")), &list); err != nil || list.Metadata.ResourceVersion == "" {
			t.Fatalf("list: %v %+v", err, list)
		}
		rv := list.Metadata.ResourceVersion
		alice.waitPassed("bookmarks", "list-rv")
		// The lab's command: a watch from "" ends its initial events with
		// the annotated bookmark at once, as kube-apiserver 1.37's does.
		out := kubectl("get", "--raw", "/api/v1/namespaces/"+ns+"/pods?watch=1&timeoutSeconds=3&allowWatchBookmarks=true")
		if !strings.Contains(out, `"k8s.io/initial-events-end":"true"`) {
			t.Fatalf("no initial-events-end bookmark in %s", out)
		}
		bookmark := bookmarkRV(t, out)
		alice.waitPassed("bookmarks", "bookmark")
		// Only the resourceVersion the server sent alice's own watch.
		answer := labhttp.APIPath + "/bookmarks/steps/bookmark-rv/answer"
		wrong, _ := strconv.Atoi(bookmark)
		if _, body := alice.post(answer, `{"answer":"`+strconv.Itoa(wrong+1000)+`"}`); !strings.Contains(body, `"correct":false`) {
			t.Fatalf("another number was right: %s", body)
		}
		if _, body := alice.post(answer, `{"answer":"`+bookmark+`"}`); !strings.Contains(body, `"correct":true`) {
			t.Fatalf("the bookmark's resourceVersion %s was wrong: %s", bookmark, body)
		}
		kubectl("get", "--raw", "/api/v1/namespaces/"+ns+"/pods?watch=1&resourceVersion="+rv+"&timeoutSeconds=1")
		alice.waitPassed("bookmarks", "resume")
	})

	t.Run("OK the watch cache's window, 410 and relist", func(t *testing.T) {
		alice.start("gone")
		// etcd's revision now, at or after the one the step began at.
		resp, err := lab.EtcdClient().Get(context.Background(), "/registry/namespaces/default")
		if err != nil {
			t.Fatal(err)
		}
		step := resp.Header.Revision
		// Compaction, behind kubelab's back or by the instructor's button,
		// moves etcd's horizon, not the watch cache's window: no step.
		if _, stderr, err := clitest.Run(t, clitest.Etcdctl(t), append(lab.EtcdctlFlags(), "compact", strconv.FormatInt(step, 10))...); err != nil {
			t.Fatalf("etcdctl compact: %v %s", err, stderr)
		}
		if resp, body := alice.inBrowser().post("/ui/compact", "{}"); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a student compacts the class's etcd: HTTP %d: %s", resp.StatusCode, body)
		}
		if resp, body := instructor(t, lab).inBrowser().post("/ui/compact", "{}"); resp.StatusCode != http.StatusOK {
			t.Fatalf("compact: HTTP %d: %s", resp.StatusCode, body)
		}
		alice.post("/kubelab/v1/labs/gone/check", "")
		if s := alice.state("gone", "window"); s != labhttp.StateCurrent {
			t.Fatalf("the window step passed by compaction: %s", s)
		}
		// Another student moves the class's window: not alice's step.
		bob := student(t, lab, "bob")
		if _, stderr, err := bob.kubectl("-n", bob.name, "label", "pod", "ssa-demo", "round=first", "--overwrite"); err != nil {
			t.Fatalf("bob's label: %v %s", err, stderr)
		}
		time.Sleep(windowFreshness) // bob's change is now old enough to drop
		var pushed struct{ Passed bool }
		if resp, body := bob.inBrowser().pushWindow(step); resp.StatusCode != http.StatusOK ||
			json.Unmarshal([]byte(body), &pushed) != nil || !pushed.Passed {
			t.Fatalf("bob's push: HTTP %d: %s", resp.StatusCode, body)
		}
		alice.post("/kubelab/v1/labs/gone/check", "")
		if s := alice.state("gone", "window"); s != labhttp.StateCurrent {
			t.Fatalf("the window step passed by another student's changes: %s", s)
		}
		// Alice's own changes, with kubectl.
		for i := range 3 {
			kubectl("-n", ns, "label", "pod", "ssa-demo", "round="+strconv.Itoa(i), "--overwrite")
		}
		alice.waitPassed("gone", "window")
		out := kubectl("get", "--raw", "/api/v1/namespaces/"+ns+"/pods?watch=1&resourceVersion="+strconv.FormatInt(step, 10)+"&timeoutSeconds=2")
		if !strings.Contains(out, `"code":410`) || !strings.Contains(out, "too old resource version: "+strconv.FormatInt(step, 10)) {
			t.Fatalf("no 410: %s", out)
		}
		alice.waitPassed("gone", "gone")
		// Y of alice's own 410, not X.
		m := regexp.MustCompile(`too old resource version: (\d+) \((\d+)\)`).FindStringSubmatch(out)
		answer := labhttp.APIPath + "/gone/steps/window-start/answer"
		if _, body := alice.post(answer, `{"answer":"`+m[1]+`"}`); !strings.Contains(body, `"correct":false`) {
			t.Fatalf("X was taken for Y: %s", body)
		}
		if _, body := alice.post(answer, `{"answer":"`+m[2]+`"}`); !strings.Contains(body, `"correct":true`) {
			t.Fatalf("Y %s was wrong: %s", m[2], body)
		}
		kubectl("get", "--raw", "/api/v1/namespaces/"+ns+"/pods")
		alice.waitPassed("gone", "relist")
	})

	t.Run("OK discovery and OpenAPI", func(t *testing.T) {
		alice.start("discovery")
		kubectl("get", "--raw", "/apis")
		alice.waitPassed("discovery", "groups")
		kubectl("explain", "pod.spec.containers.image")
		alice.waitPassed("discovery", "openapi")
	})

	t.Run("OK the aggregated API and a custom resource", func(t *testing.T) {
		alice.start("extend")
		kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1")
		alice.waitPassed("extend", "metrics")
		// The instructor defines the kind and lets students edit it, as
		// the edit role's aggregation does for any kind.
		defineNotes(t, lab)
		note := filepath.Join(t.TempDir(), "note.json")
		os.WriteFile(note, []byte(`{"apiVersion": "lab.example.com/v1", "kind": "Note", "metadata": {"name": "hello"}, "spec": {"text": "stored as JSON"}}`), 0o600)
		// A built-in kind is not a custom resource.
		kubectl("-n", ns, "create", "configmap", "not-custom")
		alice.post(labhttp.APIPath+"/extend/check", "")
		if s := alice.state("extend", "custom-resource"); s != labhttp.StateCurrent {
			t.Fatalf("a ConfigMap passed the custom resource step: %s", s)
		}
		kubectl("-n", ns, "create", "-f", note)
		if st := alice.waitPassed("extend", "custom-resource"); !strings.Contains(st.Evidence, "notes.lab.example.com") {
			t.Errorf("evidence %q", st.Evidence)
		}
		// Read with kubectl, it is not the inspector's view of etcd.
		kubectl("-n", ns, "get", "notes", "hello", "-o", "json")
		crKey := "/registry/lab.example.com/notes/" + ns + "/hello"
		resp, body := alice.inBrowser().get("/ui/etcd/value?key=" + crKey)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"apiPath":"/apis/lab.example.com/v1/namespaces/`+ns+`/notes/hello"`) {
			t.Fatalf("the inspector on %s: HTTP %d: %s", crKey, resp.StatusCode, body)
		}
		var value struct {
			Raw       []byte
			PrefixLen int
		}
		if json.Unmarshal([]byte(body), &value) != nil || !strings.HasPrefix(string(value.Raw), `{"apiVersion":"lab.example.com/v1"`) || value.PrefixLen != 0 {
			t.Errorf("the custom resource is not stored as JSON: %s", body)
		}
		alice.post(labhttp.APIPath+"/extend/check", "")
		st := alice.view("extend").Steps[2]
		if st.State != labhttp.StateCurrent || !strings.Contains(st.Why, "pods") {
			t.Fatalf("JSON without protobuf beside it: %+v", st)
		}
		alice.inBrowser().get("/ui/etcd/value?key=/registry/pods/" + ns + "/ssa-demo")
		if st := alice.waitPassed("extend", "json-beside-protobuf"); !strings.Contains(st.Evidence, "notes/hello (JSON)") || !strings.Contains(st.Evidence, "pods/ssa-demo") {
			t.Errorf("evidence %q", st.Evidence)
		}
		if resp, body := alice.post("/kubelab/v1/labs/extend/steps/where/answer", `{"answer":"crd-here"}`); !strings.Contains(body, `"correct":true`) {
			t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
		}
		if v := alice.view("extend"); !v.Done {
			t.Errorf("not done: %+v", v)
		}
	})
}

// bookmarkRV is the resourceVersion of the last BOOKMARK in a watch's
// output, one JSON event a line.
func bookmarkRV(t *testing.T, out string) string {
	t.Helper()
	rv := ""
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type   string
			Object struct {
				Metadata struct{ ResourceVersion string }
			}
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "BOOKMARK" {
			rv = ev.Object.Metadata.ResourceVersion
		}
	}
	if rv == "" {
		t.Fatalf("no bookmark in %s", out)
	}
	return rv
}

// notesCRD is the lesson's Note kind, and a ClusterRole that lets every
// holder of the edit role (each student, in their namespace) use it.
const notesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: notes.lab.example.com}
spec:
  group: lab.example.com
  scope: Namespaced
  names: {plural: notes, singular: note, kind: Note}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {text: {type: string}}}}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: notes-edit
  labels: {rbac.authorization.k8s.io/aggregate-to-edit: "true"}
rules:
- apiGroups: [lab.example.com]
  resources: [notes]
  verbs: [create, get, list, watch, update, patch, delete]
`

// defineNotes applies notesCRD as the admin, and waits until it is served.
func defineNotes(t *testing.T, lab *kubelabtest.Lab) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "notes.yaml")
	os.WriteFile(f, []byte(notesCRD), 0o600)
	if _, stderr, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", lab.KubeconfigPath(), "apply", "-f", f); err != nil {
		t.Fatalf("apply the CRD: %v %s", err, stderr)
	}
	eventually.Holds(t, "notes served", func() (bool, error) {
		_, _, err := clitest.Run(t, clitest.Kubectl(t), "--kubeconfig", lab.KubeconfigPath(), "get", "--raw", "/apis/lab.example.com/v1/notes")
		return err == nil, nil
	})
}
