package crd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
)

// TestCRDDeletionGoesThroughTheRegistry: deleting a CRD deletes its
// objects, one held by a finalizer too, as kube's CRD finalizer does: a
// deletecollection of the resource by the API server, traced like any
// request, and no write that the trace does not show.
func TestCRDDeletionGoesThroughTheRegistry(t *testing.T) {
	t.Parallel()
	// Behind the front door: the assertions are on the request
	// pipeline's traces.
	lab := startAPI(t, func(c *apitest.Config) { c.Pipeline = true })
	applyCRD(t, lab, widgetsCRD)
	mustKubectl(t, lab, "", "create", "namespace", "other")
	for _, w := range []struct{ ns, name, finalizers string }{
		{"internals-demo", "w1", ""},
		{"other", "w2", ""},
		{"other", "held", "\n  finalizers: [lab.example.com/hold]"},
	} {
		mustKubectl(t, lab, fmt.Sprintf("apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: %s\n  namespace: %s%s\nspec:\n  size: 3\n", w.name, w.ns, w.finalizers), "create", "-f", "-")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	widgets := lab.FrontDoor().Traces.Subscribe(ctx, func(tr pipeline.Trace) bool {
		return tr.APIGroup == "lab.example.com" && tr.Resource == "widgets"
	}, 100)

	mustKubectl(t, lab, "", "delete", "crd", "widgets.lab.example.com")
	eventually(t, "the widgets gone from etcd", func() string {
		if out := etcdctl(t, lab.EtcdURL(), "get", "--prefix", "/registry/lab.example.com/", "--keys-only"); strings.TrimSpace(out) != "" {
			return "left: " + out
		}
		return ""
	})

	// The traces of what removed them: each by the API server, and
	// successful.
	var got []string
	timeout := time.After(5 * time.Second)
	for !slices.Contains(got, "update other/held") {
		select {
		case tr := <-widgets:
			if tr.User != registry.APIServer.Name || tr.Code >= 300 {
				t.Fatalf("a write to the widgets by %s, code %d: %+v", tr.User, tr.Code, tr)
			}
			// A deletecollection's trace is the collection's, as in kube's
			// audit log; an update's shows its write.
			if tr.Verb != "deletecollection" && !slices.ContainsFunc(tr.Records, func(r pipeline.Record) bool { return r.Stage == pipeline.StageStorage }) {
				t.Fatalf("%s %s/%s's trace has no storage stage: %+v", tr.Verb, tr.Namespace, tr.Name, tr.Records)
			}
			got = append(got, strings.TrimSpace(tr.Verb+" "+strings.Trim(tr.Namespace+"/"+tr.Name, "/")))
		case <-timeout:
			t.Fatalf("traces of the widgets' deletion: %q, want deletecollections and the release of other/held", got)
		}
	}
	if !slices.Contains(got, "deletecollection") {
		t.Fatalf("traces of the widgets' deletion: %q, want a deletecollection", got)
	}
}
