package kubeapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/pipeline"
)

// TestNamespaceStatusPatchKeepsMetadata: a merge patch to a namespace's
// /status sets its conditions and the annotations it carries (the
// Namespaces conformance spec), but cannot change its spec.
func TestNamespaceStatusPatchKeepsMetadata(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	client := clientset(t, lab, "")
	ctx := context.Background()
	nss := client.CoreV1().Namespaces()
	patch := `{"metadata":{"annotations":{"patched-status":"yes"}},"spec":{"finalizers":["example.com/x"]},` +
		`"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"Test","message":"patched"}]}}`
	got, err := nss.Patch(ctx, "internals-demo", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations["patched-status"] != "yes" {
		t.Errorf("annotation lost: %v", got.Annotations)
	}
	if n := len(got.Status.Conditions); n == 0 || got.Status.Conditions[n-1].Reason != "Test" {
		t.Errorf("conditions: %+v", got.Status.Conditions)
	}
	if len(got.Spec.Finalizers) != 1 || got.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Errorf("a status patch changed the spec: %v", got.Spec.Finalizers)
	}
}

// testReviewAsTableIsNotAcceptable: a SelfSubjectAccessReview has no Table
// form, so asking for one is a 406 Status, as kube-apiserver answers.
func testReviewAsTableIsNotAcceptable(t *testing.T, lab *apitest.Server) {
	client := clientset(t, lab, "")
	sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"},
	}}
	table := &metav1.Table{}
	err := client.AuthorizationV1().RESTClient().Post().Resource("selfsubjectaccessreviews").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Body(sar).Do(context.Background()).Into(table)
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusNotAcceptable {
		t.Fatalf("want a 406 Status, got %v", err)
	}
	// Plain JSON still gets the answer.
	if _, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestApplyDuplicateKeys: a server-side apply body with a key twice is a
// 400 naming the line under fieldValidation=Strict (the FieldValidation
// conformance spec), a warning under Warn, and nothing under Ignore.
func TestApplyDuplicateKeys(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  a: one\n  a: two\n"
	path := "/api/v1/namespaces/internals-demo/configmaps/dup?fieldManager=test&fieldValidation="
	resp, got := do(t, lab, "PATCH", path+"Strict", "application/apply-patch+yaml", body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), `line 7: key \"a\" already set in map`) {
		t.Fatalf("Strict: %d %s", resp.StatusCode, got)
	}
	resp, got = do(t, lab, "PATCH", path+"Warn", "application/apply-patch+yaml", body)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(resp.Header.Get("Warning"), "already set in map") {
		t.Fatalf("Warn: %d %q %s", resp.StatusCode, resp.Header.Get("Warning"), got)
	}
	resp, got = do(t, lab, "PATCH", path+"Ignore", "application/apply-patch+yaml", body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Warning") != "" {
		t.Fatalf("Ignore: %d %q %s", resp.StatusCode, resp.Header.Get("Warning"), got)
	}
}

// testEveryBuiltinGroupIsDiscovered: the groups the Discovery and
// AggregatedDiscovery conformance specs look for are served, each with the
// resource they name.
func testEveryBuiltinGroupIsDiscovered(t *testing.T, lab *apitest.Server) {
	_, lists, err := clientset(t, lab, "").Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{
		"admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "apps/v1/deployments",
		"authentication.k8s.io/v1/tokenreviews", "authorization.k8s.io/v1/selfsubjectaccessreviews",
		"autoscaling/v1/horizontalpodautoscalers", "autoscaling/v2/horizontalpodautoscalers", "batch/v1/jobs",
		"certificates.k8s.io/v1/certificatesigningrequests", "coordination.k8s.io/v1/leases",
		"discovery.k8s.io/v1/endpointslices", "events.k8s.io/v1/events", "networking.k8s.io/v1/ingresses",
		"node.k8s.io/v1/runtimeclasses", "policy/v1/poddisruptionbudgets", "scheduling.k8s.io/v1/priorityclasses",
		"storage.k8s.io/v1/csinodes",
	} {
		if !found[want] {
			t.Errorf("discovery lacks %s", want)
		}
	}
}

// TestVersionsShareStorage: an events.k8s.io/v1 Event is a core Event
// under other field names, and an autoscaling/v1 autoscaler's CPU target
// is v2's CPU metric: each written through one version reads back through
// the other, as in kube-apiserver.
func TestVersionsShareStorage(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	client := clientset(t, lab, "")
	ctx := context.Background()
	const ns = "internals-demo"
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e1"}, EventTime: metav1.NowMicro(), Note: "hello", Reason: "Test", Type: "Normal",
		Action: "Testing", ReportingController: "example.com/test", ReportingInstance: "test-1",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "ssa-demo"},
	}
	if _, err := client.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := client.CoreV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{})
	if err != nil || core.Message != "hello" || core.InvolvedObject.Name != "ssa-demo" {
		t.Fatalf("core view of an events.k8s.io event: %v %+v", err, core)
	}

	cpu := int32(50)
	hpa := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "h1"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MaxReplicas:    5, TargetCPUUtilizationPercentage: &cpu,
		},
	}
	if _, err := client.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "h1", metav1.GetOptions{})
	if err != nil || len(v2.Spec.Metrics) != 1 || v2.Spec.Metrics[0].Resource == nil || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 {
		t.Fatalf("v2 view of a v1 autoscaler: %v %+v", err, v2)
	}
	list, err := client.AutoscalingV1().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || *list.Items[0].Spec.TargetCPUUtilizationPercentage != 50 {
		t.Fatalf("v1 list: %v %+v", err, list)
	}
}

// testTokenReview: a TokenReview says who a token is, from the
// authenticator that admits requests; an unknown token is not anyone.
func testTokenReview(t *testing.T, lab *apitest.Server) {
	client := clientset(t, lab, "")
	ctx := context.Background()
	bad, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}, metav1.CreateOptions{})
	if err != nil || bad.Status.Authenticated {
		t.Fatalf("unknown token: %v %+v", err, bad)
	}
	token, err := lab.FrontDoor().Authn.Mint(ctx, pipeline.User{Name: "student-1", Groups: []string{"students"}})
	if err != nil {
		t.Fatal(err)
	}
	good, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil || !good.Status.Authenticated || good.Status.User.Username != "student-1" {
		t.Fatalf("the admin's token: %v %+v", err, good)
	}
	if _, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("an empty token: %v", err)
	}
}

// testTableInEitherMetaVersion: a Table may be asked for in meta.k8s.io
// v1beta1 as well as v1 (the e2e suite asks in v1beta1), and comes back in
// the version asked for.
func testTableInEitherMetaVersion(t *testing.T, lab *apitest.Server) {
	for _, v := range []string{"v1", "v1beta1"} {
		resp, body := do(t, lab, "GET", podsPath, "", "", "Accept", "application/json;as=Table;v="+v+";g=meta.k8s.io")
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"apiVersion":"meta.k8s.io/`+v+`"`) || !strings.Contains(string(body), `"kind":"Table"`) {
			t.Errorf("%s: %d %.200s", v, resp.StatusCode, body)
		}
	}
}

// testInvalidTimeoutIsBadRequest: ?timeout= that does not parse is a 400,
// as kube-apiserver answers; a valid one is taken.
func testInvalidTimeoutIsBadRequest(t *testing.T, lab *kubelabtest.Lab) {
	resp, body := do(t, lab, "GET", "/version?timeout=invalid", "", "")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "invalid timeout specified in the request URL") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, lab, "GET", podsPath+"?timeout=30s", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("timeout=30s: %d %s", resp.StatusCode, body)
	}
}

// TestTableWatchListEndsWithABookmarkRow: a streaming list asked for as
// Tables ends with a bookmark that is a Table of one row, whose object
// carries the initial-events-end annotation (the API Streaming e2e spec).
func TestTableWatchListEndsWithABookmarkRow(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	q := "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2"
	resp, body := do(t, lab, "GET", podsPath+q, "", "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var ev struct {
			Type   string
			Object metav1.Table
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "BOOKMARK" {
			continue
		}
		if len(ev.Object.Rows) != 1 || !strings.Contains(string(ev.Object.Rows[0].Object.Raw), metav1.InitialEventsAnnotationKey) {
			t.Fatalf("bookmark %s", line)
		}
		return
	}
	t.Fatalf("no bookmark in %s", body)
}
