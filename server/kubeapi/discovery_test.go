package kubeapi

import (
	"testing"

	"github.com/kubelab/kubelab/registry"
)

// TestStorageVersionHashIsOfTheStoredVersion: discovery's storage version
// hash names the version a resource's objects are kept in, so that two
// versions of one stored kind share it. The expected hashes are what
// kube-apiserver 1.37 answers in /api/v1, /apis/autoscaling/v1 and
// /apis/events.k8s.io/v1.
func TestStorageVersionHashIsOfTheStoredVersion(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"/pods":                                "xPOwRZ+Yhw8=",
		"/events":                              "r2yiGXH7wu8=",
		"events.k8s.io/events":                 "r2yiGXH7wu8=", // stored as a core Event
		"autoscaling/horizontalpodautoscalers": "qwQve8ut294=", // v1 and v2: stored as v2
	}
	seen := map[string]int{}
	for _, r := range registry.BuiltinResources() {
		key := r.GroupVersion.Group + "/" + r.Name
		w, ok := want[key]
		if !ok {
			continue
		}
		seen[key]++
		if got := apiResource(r).StorageVersionHash; got != w {
			t.Errorf("%s %s: storageVersionHash %q, kube-apiserver answers %q", r.GroupVersion, r.Name, got, w)
		}
	}
	for key := range want {
		if seen[key] == 0 {
			t.Errorf("no built-in resource %s", key)
		}
	}
	if seen["autoscaling/horizontalpodautoscalers"] != 2 {
		t.Errorf("want autoscaling v1 and v2 HorizontalPodAutoscalers, found %d", seen["autoscaling/horizontalpodautoscalers"])
	}
}
