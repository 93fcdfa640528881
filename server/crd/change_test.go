package crd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestCRDChangeKeepsServing: a new default in a CRD's schema applies to
// stored objects on read, and a client reading all along never gets an
// error (the CRD's rows are replaced in place, never removed and re-added),
// as the CustomResourceDefinition defaulting conformance spec requires.
func TestCRDChangeKeepsServing(t *testing.T) {
	t.Parallel()
	lab := startAPI(t)
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

// v2Definition is the named definition in /openapi/v2, or nil.
func v2Definition(t *testing.T, lab served, name string) *openapi_v2.NamedSchema {
	t.Helper()
	doc, err := discovery.NewDiscoveryClientForConfigOrDie(restConfig(t, lab)).OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		if d.GetName() == name {
			return d
		}
	}
	return nil
}

// TestCRDInOpenAPIV2: a CRD's schema is published in /openapi/v2 (which
// the CustomResourcePublishOpenAPI conformance specs read) as soon as it
// is served, follows versions as they are added and stop being served,
// and leaves with the CRD.
func TestCRDInOpenAPIV2(t *testing.T) {
	t.Parallel()
	lab := startAPI(t)
	applyCRD(t, lab, widgetsCRD)
	const v1, v2 = "com.example.lab.v1.Widget", "com.example.lab.v2.Widget"
	d := v2Definition(t, lab, v1)
	if d == nil {
		t.Fatalf("%s not in /openapi/v2", v1)
	}
	spec := d.GetValue().GetProperties().GetAdditionalProperties()
	var found bool
	for _, p := range spec {
		if p.GetName() == "spec" {
			found = strings.Contains(p.GetValue().GetDescription(), "What the widget should be")
		}
	}
	if !found {
		t.Errorf("%s lacks spec's description: %v", v1, d)
	}
	if v2Definition(t, lab, "io.k8s.api.core.v1.Pod") == nil {
		t.Error("the built-in definitions are gone")
	}

	client := dynamic.NewForConfigOrDie(restConfig(t, lab))
	ctx := context.Background()
	patch := func(p string) {
		t.Helper()
		if _, err := client.Resource(crds).Patch(ctx, "widgets.lab.example.com", types.JSONPatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`[{"op":"copy","from":"/spec/versions/0","path":"/spec/versions/-"},
		{"op":"replace","path":"/spec/versions/1/name","value":"v2"},
		{"op":"replace","path":"/spec/versions/1/storage","value":false}]`)
	eventually(t, "v2 published beside v1", func() string {
		if v2Definition(t, lab, v2) == nil || v2Definition(t, lab, v1) == nil {
			return "not yet"
		}
		return ""
	})
	patch(`[{"op":"replace","path":"/spec/versions/0/served","value":false}]`)
	eventually(t, "v1 no longer served", func() string {
		if v2Definition(t, lab, v1) != nil {
			return "still there"
		}
		return ""
	})
	if err := client.Resource(crds).Delete(ctx, "widgets.lab.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "v2 gone", func() string {
		if v2Definition(t, lab, v2) != nil {
			return "still there"
		}
		return ""
	})
}
