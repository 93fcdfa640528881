package openapi

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/crd"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// supportPackages are the generator's inputs that are not served API
// groups: the packages the groups' types refer to. Without one, the
// definitions refer to its types by Go path, and no definition has it.
var supportPackages = []string{
	"k8s.io/api/scheduling/v1alpha3", // batch/v1 JobSchedulingConfiguration's policies
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"k8s.io/apimachinery/pkg/runtime",
	"k8s.io/apimachinery/pkg/version",
	"k8s.io/apimachinery/pkg/api/resource",
	"k8s.io/apimachinery/pkg/util/intstr",
}

// servedElsewhere are the built-in group versions whose rows need a
// running server to make: APIServices are the aggregator's.
var servedElsewhere = map[string]string{
	"apiregistration.k8s.io/v1": "server/aggregator",
}

// servedRows are the rows the server serves besides the aggregator's:
// the registry's built-in resources, the reviews and the CRDs.
func servedRows() []*registry.Resource {
	rows := registry.BuiltinResources()
	rows = append(rows, kubeapi.AccessReviewResources(nil, nil)...)
	rows = append(rows, kubeapi.TokenReviewResource(nil))
	return append(rows, crd.New().Resources()...)
}

// groupPackage is the Go package that holds gv's kinds, read from the types
// gv.AddToScheme registers (leaving out the meta kinds every group gets).
func groupPackage(t *testing.T, gv registry.BuiltinGroupVersion) string {
	t.Helper()
	s := runtime.NewScheme()
	if err := gv.AddToScheme(s); err != nil {
		t.Fatalf("%s: %v", gv.GroupVersion, err)
	}
	metaPkg := reflect.TypeOf(metav1.Status{}).PkgPath()
	pkgs := map[string]bool{}
	for gvk, typ := range s.AllKnownTypes() {
		if typ.PkgPath() == metaPkg || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if gvk.GroupVersion() != gv.GroupVersion {
			t.Errorf("the entry for %s adds kind %s of %s", gv.GroupVersion, gvk.Kind, gvk.GroupVersion())
		}
		pkgs[typ.PkgPath()] = true
	}
	if len(pkgs) != 1 {
		t.Fatalf("%s: want the kinds of one package, got %v", gv.GroupVersion, pkgs)
	}
	for p := range pkgs {
		return p
	}
	return ""
}

// generateInputs are the packages generate.sh hands openapi-gen.
func generateInputs(t *testing.T) []string {
	t.Helper()
	script, err := os.ReadFile("generate.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\ninputs=\(\n(.*?)\n\)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("generate.sh has no inputs=( ... ) array")
	}
	var inputs []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			inputs = append(inputs, line)
		}
	}
	return inputs
}

// TestGenerateInputsAreTheServedGroups: openapi-gen reads exactly the
// packages of registry.BuiltinGroupVersions, and what their types refer to.
func TestGenerateInputsAreTheServedGroups(t *testing.T) {
	want := map[string]bool{}
	for _, p := range supportPackages {
		want[p] = true
	}
	for _, gv := range registry.BuiltinGroupVersions {
		want[groupPackage(t, gv)] = true
	}
	got := map[string]bool{}
	for _, p := range generateInputs(t) {
		if got[p] {
			t.Errorf("generate.sh lists %s twice", p)
		}
		got[p] = true
	}
	for _, p := range sortedKeys(want) {
		if !got[p] {
			t.Errorf("generate.sh does not generate %s, a served group's package", p)
		}
	}
	for _, p := range sortedKeys(got) {
		if !want[p] {
			t.Errorf("generate.sh generates %s, which is not in registry.BuiltinGroupVersions", p)
		}
	}
}

// TestSchemesAndRowsAgreeOnTheServedGroups: the registry's scheme and the
// OpenAPI scheme know the listed group versions and no other API group,
// every served row's group version is listed, and every listed one is
// served (discovery lists the groups of the rows).
func TestSchemesAndRowsAgreeOnTheServedGroups(t *testing.T) {
	listed := map[schema.GroupVersion]bool{}
	for _, gv := range registry.BuiltinGroupVersions {
		if listed[gv.GroupVersion] {
			t.Errorf("%s is listed twice", gv.GroupVersion)
		}
		listed[gv.GroupVersion] = true
	}
	openapiScheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	// Response kinds the registry's scheme knows besides the served groups.
	responseGroups := map[string]bool{metav1.GroupName: true, "apidiscovery.k8s.io": true}
	for name, s := range map[string]*runtime.Scheme{"registry.Scheme": registry.Scheme, "the OpenAPI scheme": openapiScheme} {
		inScheme := map[schema.GroupVersion]bool{}
		for gvk := range s.AllKnownTypes() {
			if gvk.Version != runtime.APIVersionInternal && !responseGroups[gvk.Group] {
				inScheme[gvk.GroupVersion()] = true
			}
		}
		if !reflect.DeepEqual(inScheme, listed) {
			t.Errorf("%s knows %v, the list is %v", name, sortedGVs(inScheme), sortedGVs(listed))
		}
	}
	served := map[schema.GroupVersion]bool{}
	for _, r := range servedRows() {
		served[r.GroupVersion] = true
		if !listed[r.GroupVersion] {
			t.Errorf("resource %s is served in %s, which registry.BuiltinGroupVersions does not list", r.Name, r.GroupVersion)
		}
	}
	for gv := range listed {
		if _, elsewhere := servedElsewhere[gv.String()]; !served[gv] && !elsewhere {
			t.Errorf("%s is listed but no built-in resource serves it", gv)
		}
		if _, elsewhere := servedElsewhere[gv.String()]; served[gv] && elsewhere {
			t.Errorf("%s is served by a registry row and said to be served by %s", gv, servedElsewhere[gv.String()])
		}
	}
}

func sortedGVs(m map[schema.GroupVersion]bool) []string {
	out := make([]string, 0, len(m))
	for gv := range m {
		out = append(out, gv.String())
	}
	sort.Strings(out)
	return out
}
