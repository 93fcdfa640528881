package openapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubelab/kubelab/registry"
)

// gvkExtension is the vendor extension kube-apiserver puts on every
// definition that is a kind, and on every operation; kubectl, client-go and
// the server-side apply type converter all key on it.
const gvkExtension = "x-kubernetes-group-version-kind"

// newScheme registers every built-in group kubelab serves, whose
// definitions are generated into generated.GetOpenAPIDefinitions. It plays
// the part of kube-apiserver's legacyscheme: the definition namer reads kinds from it, so a definition
// carries x-kubernetes-group-version-kind whether or not its resource is
// served right now (as in kube, where the scheme is wider than the API).
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := registry.AddBuiltinGroupVersions(s); err != nil {
		return nil, fmt.Errorf("openapi: building scheme: %w", err)
	}
	return s, nil
}

// newDefinitionNamer is kube-apiserver's namer over the scheme: it keeps the
// generator's REST-friendly names (io.k8s.api.core.v1.Pod) and tags every
// definition that is a kind with x-kubernetes-group-version-kind.
func newDefinitionNamer(s *runtime.Scheme) *openapinamer.DefinitionNamer {
	return openapinamer.NewDefinitionNamer(s)
}

// hasKind reports whether the namer tags definition name with gvk.
func hasKind(namer *openapinamer.DefinitionNamer, name string, gvk schema.GroupVersionKind) bool {
	_, ext := namer.GetDefinitionName(name)
	list, _ := ext[gvkExtension].([]interface{})
	for _, item := range list {
		m, _ := item.(map[string]interface{})
		if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return true
		}
	}
	return false
}

// crossRegisteredKinds are the meta kinds that metav1.AddToGroupVersion
// registers into every group; kube-apiserver trims their GVK lists in each
// per-group-version v3 document (routes.filterScopedGVKs) so that a document
// does not advertise every group's WatchEvent.
var crossRegisteredKinds = map[string]bool{"WatchEvent": true, "DeleteOptions": true}

// scopeGVKs narrows the GVK lists of cross-registered kinds in schemas to
// the given group/version plus core v1, copying rather than editing in place
// because the builders share extension maps with the generated definitions.
func scopeGVKs(schemas map[string]*spec.Schema, group, version string) {
	for name, s := range schemas {
		if s == nil {
			continue
		}
		list, ok := s.Extensions[gvkExtension].([]interface{})
		if !ok || len(list) <= 1 {
			continue
		}
		if first, _ := list[0].(map[string]interface{}); !crossRegisteredKinds[fmt.Sprint(first["kind"])] {
			continue
		}
		var kept []interface{}
		for _, item := range list {
			m, _ := item.(map[string]interface{})
			g, v := fmt.Sprint(m["group"]), fmt.Sprint(m["version"])
			if (g == group && v == version) || (g == "" && v == "v1") {
				kept = append(kept, item)
			}
		}
		clone := *s
		clone.Extensions = make(spec.Extensions, len(s.Extensions))
		for k, v := range s.Extensions {
			clone.Extensions[k] = v
		}
		if len(kept) > 0 {
			clone.Extensions[gvkExtension] = kept
		} else {
			delete(clone.Extensions, gvkExtension)
		}
		schemas[name] = &clone
	}
}
