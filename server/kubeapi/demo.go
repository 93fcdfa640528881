package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// Seeder is who writes the lesson's demo objects, at first start and on
// a lab's reset: a system identity of its own, as the trace shows it.
var Seeder = registry.Controller("lesson-seeder")

// DemoNamespace is the lesson's namespace, with the lesson's pods in it.
const DemoNamespace = "internals-demo"

// SeedFieldManager is the field manager of the objects kubelab seeds.
const SeedFieldManager = "kubelab-seed"

// DemoSeeds build the lesson's world in namespace ns, each as the same
// request makes it on a real cluster (objects and managedFields alike):
// ssa-demo is applied by manager-a, as the lesson's etcdctl shows. labels
// go on the namespace.
func DemoSeeds(ns string, labels map[string]string) []registry.Seed {
	nsObj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": labels}})
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	pod := func(name, app, image string) registry.Seed {
		return registry.Seed{Resource: pods, Namespace: ns, FieldManager: SeedFieldManager, Manifest: fmt.Sprintf(
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":%q}},"spec":{"containers":[{"name":"main","image":%q}]}}`, name, app, image)}
	}
	return []registry.Seed{
		{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), FieldManager: SeedFieldManager, Manifest: string(nsObj)},
		{Resource: pods, Namespace: ns, Apply: true, FieldManager: "manager-a",
			Manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa-demo\n  labels:\n    app: ssa-demo\nspec:\n  containers:\n  - name: main\n    image: nginx:1.27\n"},
		pod("web-86d8686cfb-84dk9", "web", "nginx:1.27"),
		pod("gc-demo4-54cd5f4cd9-7jhlq", "gc-demo4", "busybox:1.36"),
		pod("gc-demo4-54cd5f4cd9-lddmh", "gc-demo4", "busybox:1.36"),
		pod("ssa-merge-demo-78fd5b47c4-9pk7t", "ssa-merge-demo", "nginx:1.27"),
		pod("ssa-atomic-demo-864644447-lg556", "ssa-atomic-demo", "nginx:1.27"),
	}
}

// SeedDemo creates the lesson's namespace and pods on first start, as
// ctx's user (registry.WithUser); once the namespace exists (even emptied
// by a student) it is left alone.
func (a *API) SeedDemo(ctx context.Context) error {
	namespaces, ok := a.registry.Store(coreV1.WithResource("namespaces"))
	if !ok {
		return fmt.Errorf("namespaces are not served")
	}
	if _, err := namespaces.Get(ctx, storage.Key{Name: DemoNamespace}, ""); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	return a.registry.Make(ctx, DemoSeeds(DemoNamespace, nil))
}
