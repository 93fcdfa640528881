package aggregator_test

import (
	"encoding/json"
	"strings"
	"testing"
)

const crontabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v2, served: false, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`

type apiService struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
		UID    string            `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		Group                string `json:"group"`
		GroupPriorityMinimum int32  `json:"groupPriorityMinimum"`
		VersionPriority      int32  `json:"versionPriority"`
	} `json:"spec"`
	Status struct {
		Conditions []struct{ Type, Status, Reason string } `json:"conditions"`
	} `json:"status"`
}

// getAPIService reads an APIService, ok false when it does not exist.
func getAPIService(t *testing.T, lab served, name string) (apiService, bool) {
	t.Helper()
	out, stderr, err := kubectl(t, lab, "", "get", "apiservice", name, "-o", "json")
	if err != nil {
		if strings.Contains(stderr, "NotFound") {
			return apiService{}, false
		}
		t.Fatalf("kubectl get apiservice %s: %v\n%s", name, err, stderr)
	}
	var svc apiService
	if err := json.Unmarshal([]byte(out), &svc); err != nil {
		t.Fatal(err)
	}
	return svc, true
}

func (s apiService) localAndAvailable() bool {
	for _, c := range s.Status.Conditions {
		if c.Type == "Available" {
			return c.Status == "True" && c.Reason == "Local"
		}
	}
	return false
}

// TestAutoregistration: as kube-apiserver, kubelab keeps a Local APIService
// for every group version it serves: the built-in ones from its start
// (one deleted stays deleted), and a CRD's served versions for as long as
// the CRD exists (one deleted or edited is put back).
func TestAutoregistration(t *testing.T) {
	t.Parallel()
	lab := startAggregated(t)

	apps, ok := getAPIService(t, lab, "v1.apps")
	if !ok || apps.Metadata.Labels["kube-aggregator.kubernetes.io/automanaged"] != "onstart" ||
		apps.Spec.GroupPriorityMinimum != 17800 || apps.Spec.VersionPriority != 15 || !apps.localAndAvailable() {
		t.Fatalf("v1.apps = %+v (found %v), want an onstart-managed, Local, Available APIService with kube's priorities", apps, ok)
	}
	mustKubectl(t, lab, "delete", "apiservice", "v1.apps")

	if _, _, err := kubectl(t, lab, crontabCRD, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	var crontabs apiService
	eventually(t, "v1.stable.example.com registered and available", func() string {
		svc, ok := getAPIService(t, lab, "v1.stable.example.com")
		if !ok || !svc.localAndAvailable() {
			return "not yet"
		}
		crontabs = svc
		return ""
	})
	if crontabs.Metadata.Labels["kube-aggregator.kubernetes.io/automanaged"] != "true" || crontabs.Spec.GroupPriorityMinimum != 1000 || crontabs.Spec.VersionPriority != 100 {
		t.Fatalf("v1.stable.example.com = %+v, want managed (true) with kube's CRD priorities 1000/100", crontabs)
	}
	if _, ok := getAPIService(t, lab, "v2.stable.example.com"); ok {
		t.Fatal("v2.stable.example.com registered, but the CRD does not serve v2")
	}

	// An edit is undone; a deletion too.
	mustKubectl(t, lab, "patch", "apiservice", "v1.stable.example.com", "--type=merge", "-p", `{"spec":{"groupPriorityMinimum":5}}`)
	eventually(t, "the edited priority put back", func() string {
		if svc, _ := getAPIService(t, lab, "v1.stable.example.com"); svc.Spec.GroupPriorityMinimum != 1000 {
			return "groupPriorityMinimum still edited"
		}
		return ""
	})
	mustKubectl(t, lab, "delete", "apiservice", "v1.stable.example.com")
	eventually(t, "the deleted APIService made again", func() string {
		if svc, ok := getAPIService(t, lab, "v1.stable.example.com"); !ok || svc.Metadata.UID == crontabs.Metadata.UID {
			return "not made again"
		}
		return ""
	})

	// The CRD goes, and its APIService with it.
	mustKubectl(t, lab, "delete", "crd", "crontabs.stable.example.com")
	eventually(t, "v1.stable.example.com removed with its CRD", func() string {
		if _, ok := getAPIService(t, lab, "v1.stable.example.com"); ok {
			return "still there"
		}
		return ""
	})
	if _, ok := getAPIService(t, lab, "v1.apps"); ok {
		t.Fatal("v1.apps came back: a built-in APIService is registered only at start")
	}
}
