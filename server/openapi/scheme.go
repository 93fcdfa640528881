package openapi

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// gvkExtension is the vendor extension kube-apiserver puts on every
// definition that is a kind, and on every operation; kubectl, client-go and
// the server-side apply type converter all key on it.
const gvkExtension = "x-kubernetes-group-version-kind"

// newScheme registers every group whose definitions are generated into
// generated.GetOpenAPIDefinitions. It plays the part of kube-apiserver's
// legacyscheme: the definition namer reads kinds from it, so a definition
// carries x-kubernetes-group-version-kind whether or not its resource is
// served right now (as in kube, where the scheme is wider than the API).
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	builder := runtime.NewSchemeBuilder(
		corev1.AddToScheme,
		rbacv1.AddToScheme,
		appsv1.AddToScheme,
		coordinationv1.AddToScheme,
		authorizationv1.AddToScheme,
		authenticationv1.AddToScheme,
		autoscalingv1.AddToScheme,
		policyv1.AddToScheme,
		eventsv1.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme,
		admissionregistrationv1.AddToScheme,
		autoscalingv2.AddToScheme,
		batchv1.AddToScheme,
		certificatesv1.AddToScheme,
		discoveryv1.AddToScheme,
		networkingv1.AddToScheme,
		nodev1.AddToScheme,
		schedulingv1.AddToScheme,
		storagev1.AddToScheme,
	)
	if err := builder.AddToScheme(s); err != nil {
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
