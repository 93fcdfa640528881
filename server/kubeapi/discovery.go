package kubeapi

import (
	"net"
	"net/http"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// Version is the Kubernetes version kubelab speaks, with a semver build
// suffix saying it is kubelab.
var Version = version.Info{
	Major: "1", Minor: "37", GitVersion: "v1.37.2+kubelab", GitCommit: "kubelab", GitTreeState: "clean",
	BuildDate: "2026-11-01T00:00:00Z", GoVersion: "go1.26", Compiler: "gc", Platform: "linux/amd64",
	EmulationMajor: "1", EmulationMinor: "37", MinCompatibilityMajor: "1", MinCompatibilityMinor: "36",
}

// serveDiscovery answers /api, /api/v1, /apis, /apis/<group> and
// /apis/<group>/<version>.
func (a *API) serveDiscovery(c echo.Context, info *requestInfo) error {
	if c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead {
		return methodNotAllowed()
	}
	if !info.HasVersion && (info.Prefix == "api" || !info.HasGroup) && wantsAggregated(c.Request().Header.Get("Accept")) {
		return a.serveAggregated(c, info.Prefix == "api")
	}
	var obj runtime.Object
	switch {
	case info.Prefix == "api" && !info.HasVersion:
		obj = &metav1.APIVersions{Versions: []string{"v1"}, ServerAddressByClientCIDRs: serverAddresses(c.Request())}
	case !info.HasGroup:
		obj = &metav1.APIGroupList{Groups: a.groups()}
	case !info.HasVersion:
		group, ok := a.group(info.GroupVersion.Group)
		if !ok {
			return notFound()
		}
		obj = &group
	default:
		list, ok := a.resourceList(info.GroupVersion)
		if !ok {
			return notFound()
		}
		obj = list
	}
	// Discovery documents convert to nothing, as in kube-apiserver.
	out, err := negotiateOutput(c.Request(), negotiation.DefaultEndpointRestrictions)
	if err != nil {
		return err
	}
	return writeObject(c, http.StatusOK, out.info, schema.GroupVersion{Version: "v1"}, obj)
}

// groups are the served groups, then the handed-on ones.
func (a *API) groups() []metav1.APIGroup {
	groups := a.registry.Groups()
	if ag := a.aggregatorOf(); ag != nil {
		groups = append(groups, ag.Groups()...)
	}
	return groups
}

func (a *API) group(name string) (metav1.APIGroup, bool) {
	for _, g := range a.groups() {
		if g.Name == name {
			return g, true
		}
	}
	return metav1.APIGroup{}, false
}

func (a *API) resourceList(gv schema.GroupVersion) (*metav1.APIResourceList, bool) {
	resources := a.registry.InGroupVersion(gv)
	if len(resources) == 0 {
		return nil, false
	}
	list := &metav1.APIResourceList{GroupVersion: gv.String()}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, apiResource(r))
		if r.HasStatus {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Name + "/status", Namespaced: r.Namespaced, Kind: r.Kind, Verbs: []string{"get", "patch", "update"},
			})
		}
	}
	return list, true
}

// serverAddresses tells clients where to reach this server, as /api does.
func serverAddresses(r *http.Request) []metav1.ServerAddressByClientCIDR {
	host := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "80")
	}
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: host}}
}

func (a *API) serveVersion(c echo.Context) error {
	return c.JSON(http.StatusOK, Version)
}
