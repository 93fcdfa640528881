package openapi

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"
)

// The discovery endpoints kube-apiserver documents next to the resources
// (k8s.io/apiserver/pkg/endpoints/discovery and server/routes/version.go).
// Each is its own go-restful WebService there, hence its own OpenAPI v3
// document: "api", "apis", "apis/<group>" and "version".

// discoveryRoute is a GET on root + "/" that writes sample.
func discoveryRoute(root, operation, doc string, media []string, sample interface{}) *route {
	return &route{
		method:    http.MethodGet,
		path:      root + "/",
		operation: operation,
		doc:       doc,
		consumes:  media,
		produces:  media,
		writes:    sample,
	}
}

// apiResourcesRoute is /api/v1/ or /apis/<group>/<version>/, which kube
// adds to the group version's own web service.
func apiResourcesRoute(prefix string) common.Route {
	return discoveryRoute(prefix, "getAPIResources", "get available resources", mediaTypes, metav1.APIResourceList{})
}

// discoveryServices returns the web services for /api, /apis, each named
// group and /version. kube-apiserver always serves /api and /apis, so they
// are listed even when no resource of the core or a named group is served.
func discoveryServices(groups []string) []*webService {
	one := func(root string, r *route) *webService {
		return &webService{rootPath: root, routes: []common.Route{r}}
	}
	out := []*webService{
		one("/api", discoveryRoute("/api", "getAPIVersions", "get available API versions", mediaTypes, metav1.APIVersions{})),
		one("/apis", discoveryRoute("/apis", "getAPIVersions", "get available API versions", mediaTypes, metav1.APIGroupList{})),
	}
	for _, g := range groups {
		root := "/apis/" + g
		out = append(out, one(root, discoveryRoute(root, "getAPIGroup", "get information of a group", mediaTypes, metav1.APIGroup{})))
	}
	out = append(out, one("/version", discoveryRoute("/version", "getCodeVersion", "get the version information for this server", []string{"application/json"}, version.Info{})))
	return out
}

// groupVersionFromPath splits a v3 document name ("api/v1",
// "apis/apps/v1") into its group and version; other names ("apis",
// "apis/apps", "version") are not a group version.
func groupVersionFromPath(name string) (group, version string, ok bool) {
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		return "", parts[1], true
	case len(parts) == 3 && parts[0] == "apis":
		return parts[1], parts[2], true
	}
	return "", "", false
}
