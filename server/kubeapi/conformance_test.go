package kubeapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestNamespaceStatusPatchKeepsMetadata: a merge patch to a namespace's
// /status sets its conditions and the annotations it carries (the
// Namespaces conformance spec), but cannot change its spec.
func TestNamespaceStatusPatchKeepsMetadata(t *testing.T) {
	lab := kubelabtest.Start(t)
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

// TestReviewAsTableIsNotAcceptable: a SelfSubjectAccessReview has no Table
// form, so asking for one is a 406 Status, as kube-apiserver answers.
func TestReviewAsTableIsNotAcceptable(t *testing.T) {
	lab := kubelabtest.Start(t)
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
	lab := kubelabtest.Start(t)
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
