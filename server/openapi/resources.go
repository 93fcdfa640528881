package openapi

import (
	"fmt"
	"sort"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"

	"github.com/kubelab/kubelab/registry"
)

// Resource is one REST resource the API server serves.
type Resource struct {
	GroupVersion schema.GroupVersion // {"" "v1"} for the core group
	Resource     string              // plural, e.g. "pods"
	Kind         string              // "Pod"
	Namespaced   bool
	Verbs        []string       // subset of get list watch create update patch delete deletecollection
	Subresources []string       // e.g. "status"
	Object       runtime.Object // a typed zero value (e.g. &corev1.Pod{}) naming the definition
	List         runtime.Object // e.g. &corev1.PodList{}
}

// ResourcesOf describes what the registry serves to the OpenAPI documents.
func ResourcesOf(resources []*registry.Resource) []Resource {
	var out []Resource
	for _, r := range resources {
		or := Resource{
			GroupVersion: r.GroupVersion, Resource: r.Name, Kind: r.Kind, Namespaced: r.Namespaced,
			Verbs: r.Verbs, Object: r.New(),
		}
		if r.NewList != nil {
			or.List = r.NewList()
		}
		if r.HasStatus {
			or.Subresources = []string{"status"}
		}
		out = append(out, or)
	}
	return out
}

// knownVerbs are the verbs a Resource may list.
var knownVerbs = map[string]bool{
	"get": true, "list": true, "watch": true, "create": true, "update": true,
	"patch": true, "delete": true, "deletecollection": true,
}

// subresource describes what kube serves on a subresource: its verbs
// (further limited to the parent's) and the object it reads and writes, nil
// meaning the parent's. Others (log, exec, binding, eviction...) are not
// plain object endpoints and are refused rather than documented wrongly.
type subresource struct {
	verbs  []string
	object runtime.Object
	gvk    schema.GroupVersionKind
}

var knownSubresources = map[string]subresource{
	"status":   {verbs: []string{"get", "update", "patch"}},
	"scale":    {verbs: []string{"get", "update", "patch"}, object: &autoscalingv1.Scale{}, gvk: autoscalingv1.SchemeGroupVersion.WithKind("Scale")},
	"finalize": {verbs: []string{"update"}},
}

// deleteReturnsObject lists the resources whose kube registry sets
// ReturnDeletedObject, so that DELETE documents the object, not a Status.
var deleteReturnsObject = map[schema.GroupResource]bool{
	{Resource: "pods"}:            true,
	{Resource: "serviceaccounts"}: true,
}

// modelName is the definition name the builders look a sample up by.
func modelName(obj interface{}) string {
	name := util.GetCanonicalTypeName(obj)
	if strings.Contains(name, "/") {
		name = util.ToRESTFriendlyName(name)
	}
	return name
}

// apiPrefix is where a group version's resources live.
func apiPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// apiModel is what the builders are given for one resource set: a web
// service per group version and per discovery endpoint, and the
// definitions of the served kinds (for the type converter).
type apiModel struct {
	services []*webService
	models   []string
}

// buildModel validates resources against the generated definitions and
// the scheme's kinds and turns them into web services.
func buildModel(resources []Resource, defs map[string]bool, namer *openapinamer.DefinitionNamer) (*apiModel, error) {
	byGV := map[schema.GroupVersion][]*endpoint{}
	seen := map[schema.GroupVersionResource]bool{}
	models := map[string]bool{}
	for i := range resources {
		r := &resources[i]
		gvr := r.GroupVersion.WithResource(r.Resource)
		if seen[gvr] {
			return nil, fmt.Errorf("openapi: resource %s %s listed twice", r.GroupVersion, r.Resource)
		}
		seen[gvr] = true
		eps, err := endpoints(r, defs, namer)
		if err != nil {
			return nil, err
		}
		for _, ep := range eps {
			models[modelName(ep.object)] = true
		}
		byGV[r.GroupVersion] = append(byGV[r.GroupVersion], eps...)
	}
	m := &apiModel{}
	groups := map[string]bool{}
	for gv, eps := range byGV {
		// kube installs a group version's storage paths in sorted order.
		sort.Slice(eps, func(i, j int) bool { return eps[i].path() < eps[j].path() })
		prefix := apiPrefix(gv)
		ws := &webService{rootPath: prefix, routes: []common.Route{apiResourcesRoute(prefix)}}
		for _, ep := range eps {
			ws.routes = append(ws.routes, ep.routes(prefix)...)
		}
		m.services = append(m.services, ws)
		if gv.Group != "" {
			groups[gv.Group] = true
		}
	}
	m.services = append(m.services, discoveryServices(sortedKeys(groups))...)
	sort.Slice(m.services, func(i, j int) bool { return m.services[i].rootPath < m.services[j].rootPath })
	m.models = sortedKeys(models)
	return m, nil
}

// endpoints validates one Resource and returns its endpoint and those of
// its subresources.
func endpoints(r *Resource, defs map[string]bool, namer *openapinamer.DefinitionNamer) ([]*endpoint, error) {
	gvk := r.GroupVersion.WithKind(r.Kind)
	where := fmt.Sprintf("openapi: resource %s %s", r.GroupVersion, r.Resource)
	switch {
	case r.GroupVersion.Version == "" || r.Resource == "" || r.Kind == "":
		return nil, fmt.Errorf("%s: version, resource and kind are required", where)
	case r.Resource != strings.ToLower(r.Resource) || strings.Contains(r.Resource, "/"):
		return nil, fmt.Errorf("%s: resource must be a lower-case plural without '/'", where)
	case r.Object == nil:
		return nil, fmt.Errorf("%s: Object is required", where)
	}
	verbs := map[string]bool{}
	for _, v := range r.Verbs {
		if !knownVerbs[v] {
			return nil, fmt.Errorf("%s: unknown verb %q", where, v)
		}
		verbs[v] = true
	}
	if verbs["list"] && r.List == nil {
		return nil, fmt.Errorf("%s: List is required with the list verb", where)
	}
	if err := checkDefinition(r.Object, gvk, defs, namer); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := checkDefinition(r.List, r.GroupVersion.WithKind(r.Kind+"List"), defs, namer); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	main := &endpoint{
		resource: r.Resource, namespaced: r.Namespaced, verbs: verbs, kind: r.Kind,
		gvk: metav1.GroupVersionKind(gvk), object: r.Object, list: r.List,
		deleteObj: deleteReturnsObject[gvk.GroupVersion().WithResource(r.Resource).GroupResource()],
	}
	out := []*endpoint{main}
	for _, name := range r.Subresources {
		known, ok := knownSubresources[name]
		if !ok {
			return nil, fmt.Errorf("%s: subresource %q is not supported", where, name)
		}
		sub := &endpoint{
			resource: r.Resource, subresource: name, namespaced: r.Namespaced, verbs: map[string]bool{},
			kind: r.Kind, gvk: main.gvk, object: r.Object,
		}
		if known.object != nil {
			sub.object, sub.gvk = known.object, metav1.GroupVersionKind(known.gvk)
		}
		for _, v := range known.verbs {
			sub.verbs[v] = verbs[v]
		}
		out = append(out, sub)
	}
	return out, nil
}

// checkDefinition makes sure obj (if any) has a generated definition
// tagged with gvk, which is what kubectl and the type converter match on.
func checkDefinition(obj runtime.Object, gvk schema.GroupVersionKind, defs map[string]bool, namer *openapinamer.DefinitionNamer) error {
	if obj == nil {
		return nil
	}
	name := modelName(obj)
	if !defs[name] {
		return fmt.Errorf("no generated OpenAPI definition %q (see server/openapi/generate.sh)", name)
	}
	if hasKind(namer, name, gvk) {
		return nil
	}
	return fmt.Errorf("definition %q is not kind %s %s", name, gvk.GroupVersion(), gvk.Kind)
}

// path is the endpoint's storage path, "pods" or "pods/status".
func (e *endpoint) path() string {
	if e.subresource == "" {
		return e.resource
	}
	return e.resource + "/" + e.subresource
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
