package crd_test

import (
	"strings"
	"testing"

	"github.com/kubelab/kubelab/controller/namespace"
	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
)

// TestCRDSurvivesRestart: an API started again on the etcd data an
// earlier one left serves the CRDs and custom resources it finds there.
func TestCRDSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sameDir := func(c *apitest.Config) { c.EtcdDataDir = dir }
	// The first API and its etcd stop when the subtest ends.
	t.Run("Before", func(t *testing.T) {
		lab := startAPI(t, sameDir)
		applyCRD(t, lab, widgetsCRD)
		mustKubectl(t, lab, "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: kept\n  namespace: internals-demo\nspec:\n  size: 7\n", "apply", "-f", "-")
	})
	if t.Failed() {
		return
	}

	lab := startAPI(t, sameDir)
	eventually(t, "widget served after restart", func() string {
		out, stderr, err := kubectl(t, lab, "", "get", "widget", "kept", "-n", "internals-demo", "-o", "jsonpath={.spec.size} {.spec.color}")
		if err != nil {
			return stderr
		}
		if out != "7 blue" {
			return "got " + out
		}
		return ""
	})
}

// TestCRDAcrossReplicas: two APIs share one etcd; a CRD created through
// one is served by the other, their objects are the same, and a deletion
// through one is noticed by the other.
func TestCRDAcrossReplicas(t *testing.T) {
	t.Parallel()
	one := startAPI(t)
	two := startAPI(t, func(c *apitest.Config) { c.Etcd = one.Etcd() })
	applyCRD(t, one, widgetsCRD)
	eventually(t, "second replica serves widgets", func() string {
		if _, stderr, err := kubectl(t, two, "", "get", "--raw", "/apis/lab.example.com/v1"); err != nil {
			return stderr
		}
		return ""
	})
	mustKubectl(t, two, "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: shared\n  namespace: internals-demo\nspec:\n  size: 2\n", "create", "-f", "-")
	if out := mustKubectl(t, one, "", "get", "widgets", "-n", "internals-demo", "-o", "name"); strings.TrimSpace(out) != "widget.lab.example.com/shared" {
		t.Fatalf("first replica lists %q", out)
	}
	mustKubectl(t, one, "", "delete", "crd", "widgets.lab.example.com")
	eventually(t, "second replica drops widgets", func() string {
		if _, _, err := kubectl(t, two, "", "get", "--raw", "/apis/lab.example.com/v1"); err == nil {
			return "still served"
		}
		return ""
	})
}

// TestNamespaceDeletionDeletesCustomResources: the namespace controller
// empties a deleted namespace of custom resources too.
func TestNamespaceDeletionDeletesCustomResources(t *testing.T) {
	t.Parallel()
	// The namespace controller is what deletes them: run alone, as the
	// server runs it, over the API's registry, CRDs' stores included.
	lab := startAPI(t)
	reg := lab.API().Registry()
	registrytest.Run(t, registry.Controller("namespace-controller"), namespace.New(registrytest.Core(t, reg, "namespaces"), reg.NamespacedStores, nil).Run,
		"github.com/kubelab/kubelab/controller/namespace")
	applyCRD(t, lab, widgetsCRD)
	mustKubectl(t, lab, "", "create", "namespace", "scratch")
	mustKubectl(t, lab, "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: doomed\n  namespace: scratch\nspec:\n  size: 1\n", "create", "-f", "-")
	mustKubectl(t, lab, "", "delete", "namespace", "scratch", "--wait=false")
	eventually(t, "widget deleted with its namespace", func() string {
		if out := etcdctl(t, lab.EtcdURL(), "get", "--prefix", "/registry/lab.example.com/widgets/scratch/", "--keys-only"); strings.TrimSpace(out) != "" {
			return out
		}
		return ""
	})
}
