package crd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/clitest"
)

// widgetsCRD is a namespaced CRD with a structural schema (a default, a
// minimum, an enum), a status subresource, printer columns, a short name
// and a category.
const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.lab.example.com
spec:
  group: lab.example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the widget should be.
            required: [size]
            x-kubernetes-validations:
            - rule: "self.color != 'red' || self.size <= 10"
              message: red widgets are at most 10 big
            properties:
              size:
                type: integer
                minimum: 1
                description: How big the widget is.
              color:
                type: string
                enum: [red, green, blue]
                default: blue
          status:
            type: object
            properties:
              ready:
                type: boolean
`

func kubectl(t *testing.T, lab served, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.RunWith(t, clitest.Options{Stdin: stdin}, clitest.Kubectl(t), append([]string{"--kubeconfig", lab.KubeconfigPath()}, args...)...)
}

func mustKubectl(t *testing.T, lab served, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := kubectl(t, lab, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// etcdctl runs etcdctl against the etcd at endpoint.
func etcdctl(t *testing.T, endpoint string, args ...string) string {
	t.Helper()
	out, stderr, err := clitest.Run(t, clitest.Etcdctl(t), append([]string{"--endpoints", endpoint}, args...)...)
	if err != nil {
		t.Fatalf("etcdctl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// eventually retries check until it returns "" or the time is up.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func applyCRD(t *testing.T, lab served, doc string) {
	t.Helper()
	mustKubectl(t, lab, doc, "apply", "-f", "-")
	eventually(t, "CRD established", func() string {
		out, _, _ := kubectl(t, lab, "", "get", "crd", "widgets.lab.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if out != "True" {
			return "Established is " + out
		}
		return ""
	})
}

// TestCRDWithKubectl: kubectl applies a CRD; its resource is discovered,
// explained, created (pruned, defaulted, validated), printed with its
// columns, stored as plain JSON; deleting the CRD removes it and its
// objects.
func TestCRDWithKubectl(t *testing.T) {
	t.Parallel()
	lab := startAPI(t)
	applyCRD(t, lab, widgetsCRD)

	crd := mustKubectl(t, lab, "", "get", "crd", "widgets.lab.example.com", "-o", "json")
	var got struct {
		Status struct {
			Conditions    []struct{ Type, Status, Reason string }
			AcceptedNames struct{ Kind string }
		}
	}
	if err := json.Unmarshal([]byte(crd), &got); err != nil {
		t.Fatal(err)
	}
	conds := map[string]string{}
	for _, c := range got.Status.Conditions {
		conds[c.Type] = c.Status + "/" + c.Reason
	}
	if conds["NamesAccepted"] != "True/NoConflicts" || conds["Established"] != "True/InitialNamesAccepted" || got.Status.AcceptedNames.Kind != "Widget" {
		t.Fatalf("status: %+v", got.Status)
	}

	if out := mustKubectl(t, lab, "", "api-resources", "--api-group", "lab.example.com"); !strings.Contains(out, "widgets") || !strings.Contains(out, "wd") {
		t.Fatalf("api-resources:\n%s", out)
	}
	explain := mustKubectl(t, lab, "", "explain", "widget.spec")
	for _, want := range []string{"What the widget should be.", "size", "How big the widget is.", "color"} {
		if !strings.Contains(explain, want) {
			t.Fatalf("explain widget.spec lacks %q:\n%s", want, explain)
		}
	}

	// An unknown field is refused under Strict (kubectl's default), pruned
	// with a warning under Warn; color is defaulted.
	w1 := "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: internals-demo\nspec:\n  size: 3\n  extra: dropped\n"
	_, stderr, err := kubectl(t, lab, w1, "apply", "-f", "-")
	if err == nil || !strings.Contains(stderr, `strict decoding error: unknown field "spec.extra"`) {
		t.Fatalf("strict apply with an unknown field: err %v\n%s", err, stderr)
	}
	_, stderr, err = kubectl(t, lab, w1, "apply", "--validate=warn", "-f", "-")
	if err != nil {
		t.Fatalf("apply w1: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, `unknown field "spec.extra"`) {
		t.Errorf("no warning about the pruned field: %s", stderr)
	}
	table := mustKubectl(t, lab, "", "get", "wd", "-n", "internals-demo")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SIZE COLOR AGE" || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "w1 3 blue ") {
		t.Fatalf("kubectl get wd:\n%s", table)
	}
	if out := mustKubectl(t, lab, "", "get", "all", "-n", "internals-demo", "-o", "name"); !strings.Contains(out, "widget.lab.example.com/w1") {
		t.Fatalf("category all lacks the widget:\n%s", out)
	}

	raw := etcdctl(t, lab.EtcdURL(), "get", "/registry/lab.example.com/widgets/internals-demo/w1", "--print-value-only")
	var stored map[string]any
	if err := json.Unmarshal([]byte(raw), &stored); err != nil {
		t.Fatalf("etcd value is not plain JSON: %v\n%q", err, raw)
	}
	spec, _ := stored["spec"].(map[string]any)
	if spec["color"] != "blue" || spec["size"] != float64(3) || spec["extra"] != nil {
		t.Fatalf("stored spec %v: want size 3, color defaulted, extra pruned", spec)
	}
	if pod := etcdctl(t, lab.EtcdURL(), "get", "/registry/pods/internals-demo/ssa-demo", "--print-value-only"); !strings.HasPrefix(pod, "k8s\x00") {
		t.Fatalf("a pod beside it is not protobuf: %q", pod[:min(len(pod), 8)])
	}

	// Against the schema: 422 with the field's cause, nothing written.
	bad := "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: w2\n  namespace: internals-demo\nspec:\n  size: 0\n  color: purple\n"
	_, stderr, err = kubectl(t, lab, bad, "apply", "-f", "-")
	if err == nil || !strings.Contains(stderr, "spec.size: Invalid value: 0") || !strings.Contains(stderr, `spec.color: Unsupported value: "purple"`) {
		t.Fatalf("invalid widget: err %v\n%s", err, stderr)
	}
	if out := etcdctl(t, lab.EtcdURL(), "get", "/registry/lab.example.com/widgets/internals-demo/w2", "--keys-only"); strings.TrimSpace(out) != "" {
		t.Fatalf("an invalid widget was written: %s", out)
	}
	bigRed := "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: w2\n  namespace: internals-demo\nspec:\n  size: 11\n  color: red\n"
	if _, stderr, err = kubectl(t, lab, bigRed, "apply", "-f", "-"); err == nil || !strings.Contains(stderr, "spec: Invalid value") || !strings.Contains(stderr, "red widgets are at most 10 big") {
		t.Fatalf("a widget against the CEL rule: err %v\n%s", err, stderr)
	}

	// Status subresource: the main resource cannot change status.
	mustKubectl(t, lab, "", "patch", "widget", "w1", "-n", "internals-demo", "--type=merge", "-p", `{"spec":{"size":4},"status":{"ready":true}}`)
	mustKubectl(t, lab, "", "patch", "widget", "w1", "-n", "internals-demo", "--subresource=status", "--type=merge", "-p", `{"status":{"ready":true},"spec":{"size":9}}`)
	out := mustKubectl(t, lab, "", "get", "widget", "w1", "-n", "internals-demo", "-o", "jsonpath={.spec.size} {.status.ready} {.metadata.generation}")
	if out != "4 true 2" {
		t.Fatalf("after patches: %q, want size 4, ready true, generation 2", out)
	}
	// JSON patch, and server-side apply with a conflict on a field another manager owns.
	mustKubectl(t, lab, "", "patch", "widget", "w1", "-n", "internals-demo", "--type=json", "-p", `[{"op":"replace","path":"/spec/color","value":"red"}]`)
	ssa := "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: internals-demo\nspec:\n  size: 5\n"
	if _, stderr, err := kubectl(t, lab, ssa, "apply", "--server-side", "--field-manager=other", "-f", "-"); err == nil || !strings.Contains(stderr, "conflict") {
		t.Fatalf("server-side apply over another manager's field: err %v\n%s", err, stderr)
	}
	mustKubectl(t, lab, ssa, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-")
	if out := mustKubectl(t, lab, "", "get", "widget", "w1", "-n", "internals-demo", "-o", "jsonpath={.spec.size} {.spec.color}"); out != "5 red" {
		t.Fatalf("after apply: %q", out)
	}

	mustKubectl(t, lab, "", "delete", "crd", "widgets.lab.example.com")
	eventually(t, "group gone from discovery", func() string {
		if _, _, err := kubectl(t, lab, "", "get", "--raw", "/apis/lab.example.com/v1"); err == nil {
			return "/apis/lab.example.com/v1 still served"
		}
		return ""
	})
	// The last pass of deletes runs once the group is no longer served.
	eventually(t, "objects gone after the CRD was deleted", func() string {
		if out := etcdctl(t, lab.EtcdURL(), "get", "--prefix", "/registry/lab.example.com/", "--keys-only"); strings.TrimSpace(out) != "" {
			return "left: " + out
		}
		return ""
	})
	if out := mustKubectl(t, lab, "", "get", "--raw", "/apis"); strings.Contains(out, "lab.example.com") {
		t.Fatalf("/apis still lists the group: %s", out)
	}
}

// TestInvalidCRDs: apiextensions' own validation refuses bad CRDs with
// causes, and nothing is written.
func TestInvalidCRDs(t *testing.T) {
	t.Parallel()
	lab := startAPI(t)
	cases := map[string]struct{ from, to, want string }{
		"NonStructural": {"          spec:\n            type: object\n", "          spec:\n            description: no type\n", "openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"},
		"WrongName":     {"  name: widgets.lab.example.com", "  name: gadgets.lab.example.com", `metadata.name: Invalid value: "gadgets.lab.example.com": must be spec.names.plural+"."+spec.group`},
		"BadGroup":      {"  group: lab.example.com", "  group: Lab_Example", "spec.group: Invalid value"},
		"BuiltinGroup":  {"  group: lab.example.com", "  group: rbac.authorization.k8s.io", "spec.group: Invalid value: \"rbac.authorization.k8s.io\": is served by the API server itself"},
		"NoStorage":     {"    storage: true", "    storage: false", "must have exactly one version marked as storage version"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(widgetsCRD, c.from, c.to, 1)
			if doc == widgetsCRD {
				t.Fatalf("%q not in the CRD", c.from)
			}
			if name == "BuiltinGroup" {
				doc = strings.Replace(doc, "widgets.lab.example.com", "widgets.rbac.authorization.k8s.io", 1)
			}
			_, stderr, err := kubectl(t, lab, doc, "create", "-f", "-")
			if err == nil || !strings.Contains(stderr, "is invalid") || !strings.Contains(stderr, c.want) {
				t.Fatalf("err %v, want 422 with %q:\n%s", err, c.want, stderr)
			}
			if out := etcdctl(t, lab.EtcdURL(), "get", "--prefix", "/registry/apiextensions.k8s.io/", "--keys-only"); strings.TrimSpace(out) != "" {
				t.Fatalf("written: %s", out)
			}
		})
	}
}

// TestCRDVersions: every served version is discovered, the preferred one
// first, and an object reads as the version asked for (the "None"
// conversion); the status records the storage version.
func TestCRDVersions(t *testing.T) {
	t.Parallel()
	lab := startAPI(t)
	v1beta1 := "  - name: v1beta1\n    served: true\n    storage: false\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
	doc := strings.Replace(widgetsCRD, "  versions:\n", "  versions:\n"+v1beta1, 1)
	applyCRD(t, lab, doc)
	var group struct {
		PreferredVersion struct{ Version string }
		Versions         []struct{ Version string }
	}
	if err := json.Unmarshal([]byte(mustKubectl(t, lab, "", "get", "--raw", "/apis/lab.example.com")), &group); err != nil {
		t.Fatal(err)
	}
	if group.PreferredVersion.Version != "v1" || len(group.Versions) != 2 || group.Versions[1].Version != "v1beta1" {
		t.Fatalf("group discovery: %+v", group)
	}
	mustKubectl(t, lab, "apiVersion: lab.example.com/v1beta1\nkind: Widget\nmetadata:\n  name: old\n  namespace: internals-demo\nspec:\n  size: 1\n", "create", "-f", "-")
	for _, v := range []string{"v1", "v1beta1"} {
		if out := mustKubectl(t, lab, "", "get", "widgets."+v+".lab.example.com", "old", "-n", "internals-demo", "-o", "jsonpath={.apiVersion}"); out != "lab.example.com/"+v {
			t.Fatalf("read through %s: apiVersion %q", v, out)
		}
	}
	if out := mustKubectl(t, lab, "", "get", "crd", "widgets.lab.example.com", "-o", "jsonpath={.status.storedVersions}"); out != `["v1"]` {
		t.Fatalf("storedVersions %s", out)
	}
	// Written through v1beta1, kept in etcd as the storage version, v1, as
	// kube-apiserver keeps it; and discovery gives both versions the
	// storage version's hash.
	raw := etcdctl(t, lab.EtcdURL(), "get", "/registry/lab.example.com/widgets/internals-demo/old", "--print-value-only")
	var stored struct{ APIVersion string }
	if err := json.Unmarshal([]byte(raw), &stored); err != nil || stored.APIVersion != "lab.example.com/v1" {
		t.Fatalf("kept in etcd as %q (%v), want lab.example.com/v1:\n%s", stored.APIVersion, err, raw)
	}
	hashes := map[string]string{}
	for _, v := range []string{"v1", "v1beta1"} {
		var list metav1.APIResourceList
		if err := json.Unmarshal([]byte(mustKubectl(t, lab, "", "get", "--raw", "/apis/lab.example.com/"+v)), &list); err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			if r.Name == "widgets" {
				hashes[v] = r.StorageVersionHash
			}
		}
	}
	if hashes["v1"] == "" || hashes["v1"] != hashes["v1beta1"] {
		t.Fatalf("storage version hashes %v: want one, the storage version's, for both", hashes)
	}
}

// TestCustomResourceWatch: a raw watch on a custom resource sends its
// initial events and the bookmark that ends them, and, as in
// kube-apiserver, a watch from a compacted resourceVersion still inside the
// watch cache's window is served from the cache.
func TestCustomResourceWatch(t *testing.T) {
	t.Parallel()
	lab := startAPI(t)
	applyCRD(t, lab, widgetsCRD)
	mustKubectl(t, lab, "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: watched\n  namespace: internals-demo\nspec:\n  size: 1\n", "create", "-f", "-")
	path := "/apis/lab.example.com/v1/namespaces/internals-demo/widgets"
	out := mustKubectl(t, lab, "", "get", "--raw", path+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2")
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type   string
			Object struct {
				Metadata struct {
					Name        string
					Annotations map[string]string
				}
			}
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
			continue // a periodic bookmark
		}
		types = append(types, ev.Type+" "+ev.Object.Metadata.Name)
	}
	if strings.Join(types, ",") != "ADDED watched,BOOKMARK " {
		t.Fatalf("initial events: %v\n%s", types, out)
	}
	rv := mustKubectl(t, lab, "", "get", "widget", "watched", "-n", "internals-demo", "-o", "jsonpath={.metadata.resourceVersion}")
	mustKubectl(t, lab, "", "label", "widget", "watched", "-n", "internals-demo", "round=two")
	mustKubectl(t, lab, "", "create", "configmap", "later", "-n", "internals-demo") // history moves on past the label
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	compactNow(ctx, t, lab)
	out = mustKubectl(t, lab, "", "get", "--raw", path+"?watch=1&resourceVersion="+rv+"&timeoutSeconds=2")
	if strings.Contains(out, `"type":"ERROR"`) || !strings.Contains(out, `"type":"MODIFIED"`) || !strings.Contains(out, `"round":"two"`) {
		t.Fatalf("watch from a compacted resourceVersion inside the window:\n%s", out)
	}
}
