package crd_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestCRDChangeKeepsServing: a new default in a CRD's schema applies to
// stored objects on read, and a client reading all along never gets an
// error (the CRD's rows are replaced in place, never removed and re-added),
// as the CustomResourceDefinition defaulting conformance spec requires.
func TestCRDChangeKeepsServing(t *testing.T) {
	lab := kubelabtest.Start(t)
	applyCRD(t, lab, widgetsCRD)
	client := dynamic.NewForConfigOrDie(restConfig(t, lab))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := client.Resource(widgets).Namespace("default")
	if _, err := ws.Create(ctx, widget("w1", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := `[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/shape","value":{"type":"string","default":"round"}}]`
	if _, err := client.Resource(crds).Patch(ctx, "widgets.lab.example.com", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := ws.Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading while the CRD changes: %v", err)
		}
		if shape, _, _ := unstructured.NestedString(got.Object, "spec", "shape"); shape == "round" {
			break
		}
		time.Sleep(time.Millisecond)
	}
}
