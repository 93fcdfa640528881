package classroom_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// graderDoc is the grader endpoint's OpenAPI document, as the docs give it.
const graderDoc = "../../docs/grader.openapi.json"

// wantGraderSchema checks that body, a real answer of the grader, is what
// the OpenAPI document's schema of that name says: its fields, their
// types, the required ones, and no field the document does not name.
func wantGraderSchema(t *testing.T, name, body string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.FromSlash(graderDoc))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", graderDoc, err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	// kube-openapi's validator takes no references: each is replaced by
	// the schema it names (the document has no cycles).
	var inline func(v any) any
	inline = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				target, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
				if !ok {
					t.Fatalf("%s: %s names no schema", graderDoc, ref)
				}
				return inline(target)
			}
			out := map[string]any{}
			for k, e := range v {
				out[k] = inline(e)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = inline(e)
			}
			return out
		}
		return v
	}
	target, ok := schemas[name]
	if !ok {
		t.Fatalf("%s has no schema %s", graderDoc, name)
	}
	b, _ := json.Marshal(inline(target))
	var schema spec.Schema
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	var data any
	if err := json.Unmarshal([]byte(body), &data); err != nil {
		t.Fatalf("the answer is not JSON: %v\n%.300s", err, body)
	}
	if err := validate.AgainstSchema(&schema, data, strfmt.Default); err != nil {
		t.Errorf("the answer is not a %s as %s says: %v\n%.1000s", name, graderDoc, err, body)
	}
}
