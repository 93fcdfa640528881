package kubecore

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubelab/kubelab/internal/browsertest"
	"github.com/kubelab/kubelab/internal/webclient"
)

// TestLessonOnKubeCore reads the lesson on the kube core as a student
// does: its pages, the lesson's own namespace and pods, Run it live, and
// the pipeline tracer, whose stages are kube-apiserver's own (its
// admission plugins by their names). The views still built on kubelab's
// own core say so in place.
func TestLessonOnKubeCore(t *testing.T) {
	s := startKubeCore(t)

	t.Run("TheLessonsNamespaceIsSeeded", func(t *testing.T) {
		var pods struct {
			Items []struct {
				Metadata struct {
					Name          string
					ManagedFields []struct{ Manager, Operation string }
				}
			}
		}
		if err := json.Unmarshal([]byte(kubectl(t, s, "-n", "internals-demo", "get", "pods", "-o", "json", "--show-managed-fields")), &pods); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, p := range pods.Items {
			names[p.Metadata.Name] = true
			if p.Metadata.Name != "ssa-demo" {
				continue
			}
			applied := false
			for _, f := range p.Metadata.ManagedFields {
				applied = applied || (f.Manager == "manager-a" && f.Operation == "Apply")
			}
			if !applied {
				t.Errorf("ssa-demo's managedFields %+v: want manager-a's Apply, as the lesson's etcdctl shows", p.Metadata.ManagedFields)
			}
		}
		for _, want := range []string{"ssa-demo", "web-86d8686cfb-84dk9", "gc-demo4-54cd5f4cd9-7jhlq"} {
			if !names[want] {
				t.Errorf("pods in internals-demo %v: no %s", names, want)
			}
		}
	})

	t.Run("PagesAndTheirViews", func(t *testing.T) {
		c := &http.Client{}
		resp, body := webclient.Send(t, c, http.MethodGet, s.URL()+"/lesson/request-path", "", "Accept", "text/html")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-live="tracer"`) {
			t.Fatalf("/lesson/request-path: %s, tracer there: %v", resp.Status, strings.Contains(body, `data-live="tracer"`))
		}
		resp, body = webclient.Send(t, c, http.MethodGet, s.URL()+"/lab", "", "Accept", "text/html")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/lab: %s", resp.Status)
		}
		for _, view := range []string{"timeline", "inspector"} {
			if strings.Contains(body, `data-live="`+view+`"`) || !strings.Contains(body, `data-not-on-kube-core="`+view+`"`) {
				t.Errorf("/lab: the %s view is not shown as not on the kube core", view)
			}
		}
		for _, view := range []string{"tracer", "pollwatch"} {
			if !strings.Contains(body, `data-live="`+view+`"`) {
				t.Errorf("/lab: no %s view", view)
			}
		}
		// Their endpoints say why, as a Status, rather than reaching kube.
		resp, body = webclient.Send(t, c, http.MethodGet, s.URL()+"/ui/etcd/keys?prefix=/registry/", "")
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "not yet on the kube core") {
			t.Errorf("/ui/etcd/keys: %s %s", resp.Status, body)
		}
	})

	t.Run("RunItLiveAndTheTracer", func(t *testing.T) {
		ctx := browsertest.Start(t)
		browsertest.Do(t, ctx, "open the lesson", chromedp.Navigate(s.URL()+"/lesson/request-path"))
		browsertest.WaitJS(t, ctx, "the tracer to connect", `document.querySelector(".tracer .conn.live") !== null`)
		browsertest.Do(t, ctx, "run it live", browsertest.Press(`figure[data-cmd="list-table"] [data-run]`))
		browsertest.WaitJS(t, ctx, "the live response", `document.querySelector('figure[data-cmd="list-table"]').dataset.state === "done"`)
		resp := browsertest.Eval[string](t, ctx, `document.querySelector('figure[data-cmd="list-table"] .live-resp').textContent`)
		if !strings.Contains(resp, "HTTP/1.1 200 OK") || !strings.Contains(resp, "ssa-demo") {
			t.Fatalf("Run it live's response %q", resp)
		}
		// The view's request is traced as the view's, which no client can claim.
		browsertest.WaitJS(t, ctx, "Run it live's list in the tracer", `document.querySelector('.trace[data-verb="list"][data-source="run-it-live"]') !== null`)
		kubectl(t, s, "-n", "internals-demo", "label", "pod", "web-86d8686cfb-84dk9", "traced=yes")
		browsertest.WaitJS(t, ctx, "kubectl's patch in the tracer", `document.querySelector('.trace[data-verb="patch"]:not([data-source])') !== null`)
		chips := browsertest.Eval[string](t, ctx, `document.querySelector('.trace[data-verb="patch"]:not([data-source])').textContent`)
		// kube's own admission plugins, by kube's names, in kube's order.
		for _, plugin := range []string{"authentication", "authorization", "NamespaceLifecycle", "ValidatingAdmissionPolicy", "storage"} {
			if !strings.Contains(chips, plugin) {
				t.Errorf("the patch's trace %q: no %s", chips, plugin)
			}
		}
		browsertest.WaitJS(t, ctx, "the flowchart to light up", `document.querySelector('.flow-node[data-stage="storage"].allow') !== null`)
		browsertest.ScrollTo(t, ctx, ".tracer")
		browsertest.Shot(t, ctx, "kubecore-tracer")
	})

	t.Run("TheLabPageInThai", func(t *testing.T) {
		ctx := browsertest.Start(t)
		browsertest.Do(t, ctx, "open the lab page", chromedp.Navigate(s.URL()+"/lab"))
		browsertest.Do(t, ctx, "switch to Thai", browsertest.Press(`.langs a[lang="th"]`))
		browsertest.WaitJS(t, ctx, "the Thai lab page", `document.documentElement.lang === "th" && document.querySelector('[data-not-on-kube-core="timeline"]') !== null`)
		browsertest.ScrollTo(t, ctx, `[data-not-on-kube-core="timeline"]`)
		browsertest.Shot(t, ctx, "kubecore-lab-th")
	})
}
