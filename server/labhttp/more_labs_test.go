package labhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/labhttp"
)

// windowFreshness shortens kube's 75 s, the age an event must reach before
// a full watch cache window drops it, so that the gone lab runs quickly.
const windowFreshness = time.Second

// Labs 2, 3, 5 and 6 with the real kubectl and etcdctl, as a student.
func TestMoreLabsWithKubectlAndEtcdctl(t *testing.T) {
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
		if out := kubectl("get", "--raw", "/api/v1/namespaces/"+ns+"/pods?watch=1&timeoutSeconds=3&allowWatchBookmarks=true"); !strings.Contains(out, `"BOOKMARK"`) || !strings.Contains(out, `"k8s.io/initial-events-end":"true"`) {
			t.Fatalf("no initial-events-end bookmark in %s", out)
		}
		alice.waitPassed("bookmarks", "bookmark")
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
		if resp, body := bob.inBrowser().post("/ui/window/push", `{"past":`+strconv.FormatInt(step, 10)+`}`); resp.StatusCode != http.StatusOK ||
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

	t.Run("OK the aggregated API", func(t *testing.T) {
		alice.start("extend")
		kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1")
		alice.waitPassed("extend", "metrics")
		if resp, body := alice.post("/kubelab/v1/labs/extend/steps/where/answer", `{"answer":"crd-here"}`); !strings.Contains(body, `"correct":true`) {
			t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
		}
		if v := alice.view("extend"); !v.Done {
			t.Errorf("not done: %+v", v)
		}
	})
}
