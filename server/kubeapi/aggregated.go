package kubeapi

import (
	"bytes"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
)

// aggregatedMediaType is what a client asks for, and gets, when it wants all
// of /api's or /apis' discovery in one document (kubectl and client-go do).
const aggregatedMediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether the Accept header lists aggregated
// discovery v2 before any plain type, as client-go does.
func wantsAggregated(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if params["as"] == "APIGroupDiscoveryList" && params["g"] == apidiscoveryv2.SchemeGroupVersion.Group && params["v"] == "v2" && mt == "application/json" {
			return true
		}
		if params["as"] == "" {
			return false
		}
	}
	return false
}

// serveAggregated answers /api or /apis with every group, version and
// resource at once: the core group for /api, the named groups for /apis.
func (a *API) serveAggregated(c echo.Context, core bool) error {
	list := &apidiscoveryv2.APIGroupDiscoveryList{}
	if core {
		list.Items = append(list.Items, a.groupDiscovery(""))
	} else {
		for _, g := range a.registry.Groups() {
			list.Items = append(list.Items, a.groupDiscovery(g.Name))
		}
		if ag := a.aggregatorOf(); ag != nil {
			list.Items = append(list.Items, ag.Discovery()...)
		}
	}
	c.Response().Header().Set("Vary", "Accept")
	var buf bytes.Buffer
	enc := Codecs.EncoderForVersion(serializerFor(runtime.ContentTypeJSON).Serializer, apidiscoveryv2.SchemeGroupVersion)
	if err := enc.Encode(list, &buf); err != nil {
		return err
	}
	return c.Blob(http.StatusOK, aggregatedMediaType, buf.Bytes())
}

func (a *API) groupDiscovery(group string) apidiscoveryv2.APIGroupDiscovery {
	gd := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group}}
	versions := map[string]*apidiscoveryv2.APIVersionDiscovery{}
	var order []string
	for _, r := range a.registry.All() {
		if r.GroupVersion.Group != group {
			continue
		}
		v, ok := versions[r.GroupVersion.Version]
		if !ok {
			v = &apidiscoveryv2.APIVersionDiscovery{Version: r.GroupVersion.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			versions[r.GroupVersion.Version] = v
			order = append(order, r.GroupVersion.Version)
		}
		gvk := metav1.GroupVersionKind{Group: group, Version: r.GroupVersion.Version, Kind: r.Kind}
		rd := apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: &gvk, SingularResource: r.SingularName, Verbs: r.Verbs,
			ShortNames: r.ShortNames, Categories: r.Categories, Scope: apidiscoveryv2.ScopeCluster,
		}
		if r.Namespaced {
			rd.Scope = apidiscoveryv2.ScopeNamespace
		}
		if r.HasStatus {
			rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource: "status", ResponseKind: &gvk, Verbs: []string{"get", "patch", "update"},
			})
		}
		v.Resources = append(v.Resources, rd)
	}
	sort.SliceStable(order, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(order[i], order[j]) > 0 })
	for _, name := range order {
		gd.Versions = append(gd.Versions, *versions[name])
	}
	return gd
}
