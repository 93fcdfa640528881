package kubeapi

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// requestInfoFactory parses /api and /apis paths into verb, resource,
// namespace, name and subresource: kube-apiserver's own parser.
var requestInfoFactory = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// requestInfo is what a URL under /api or /apis asks for: kube's
// RequestInfo, plus what the discovery paths (which kube does not parse as
// resource requests) name, and the namespace of the object's key.
type requestInfo struct {
	// Prefix is "api" (the core group) or "apis" (named groups).
	Prefix       string
	Verb         string
	GroupVersion schema.GroupVersion
	// HasVersion is false for /api and /apis, and /apis/<group>.
	HasVersion bool
	HasGroup   bool
	// Namespace is the namespace the resource is in, by the path: empty
	// for the namespace object itself, which kube's RequestInfo reads as
	// in its own namespace (for authorization, as the registry does too).
	Namespace   string
	Resource    string
	Name        string
	Subresource string
	// kube is kube-apiserver's reading of the path, as authorization of a
	// request handed on to another server sees it.
	kube *apirequest.RequestInfo
}

// parseRequestInfo returns nil for a path kubelab does not serve: neither
// /api nor /apis, a proxy verb, deeper than a subresource, or a
// path kube's parser cannot read (kube-apiserver answers /api/v1/watch
// with a plain-text 500; kubelab says 404).
func parseRequestInfo(r *http.Request) *requestInfo {
	segs := splitPath(r.URL.Path)
	if len(segs) == 0 || (segs[0] != "api" && segs[0] != "apis") {
		return nil
	}
	kube, err := requestInfoFactory.NewRequestInfo(r)
	if err != nil {
		return nil
	}
	info := &requestInfo{Prefix: segs[0], Verb: kube.Verb, kube: kube}
	if !kube.IsResourceRequest {
		discoveryPath(info, segs[1:])
		return info
	}
	if kube.Verb == "proxy" || len(kube.Parts) > 3 {
		return nil
	}
	info.HasGroup, info.HasVersion = true, true
	info.GroupVersion = schema.GroupVersion{Group: kube.APIGroup, Version: kube.APIVersion}
	info.Resource, info.Name, info.Subresource = kube.Resource, kube.Name, kube.Subresource
	if inNamespaceByPath(segs, kube) {
		info.Namespace = kube.Namespace
	}
	if watchByPath(segs, kube) && r.Method != http.MethodGet && r.Method != http.MethodHead {
		info.Verb = "" // a watch path serves GET only: 405, as in kube
	}
	return info
}

// discoveryPath reads /api[/<version>] and /apis[/<group>[/<version>]].
func discoveryPath(info *requestInfo, rest []string) {
	if info.Prefix == "api" {
		info.HasGroup = true
		if len(rest) > 0 {
			info.HasVersion, info.GroupVersion.Version = true, rest[0]
		}
		return
	}
	if len(rest) > 0 {
		info.HasGroup, info.GroupVersion.Group = true, rest[0]
	}
	if len(rest) > 1 {
		info.HasVersion, info.GroupVersion.Version = true, rest[1]
	}
}

// versionEnd is how many segments name the prefix, group and version.
func versionEnd(kube *apirequest.RequestInfo) int {
	if kube.APIPrefix == "api" {
		return 2
	}
	return 3
}

// watchByPath is whether the verb came from a /watch/ segment.
func watchByPath(segs []string, kube *apirequest.RequestInfo) bool {
	n := versionEnd(kube)
	return len(segs) > n && segs[n] == "watch" && kube.Verb == "watch"
}

// inNamespaceByPath tells /namespaces/<ns>/<resource>... (a resource in
// namespace ns) from /namespaces/<ns>[/status|/finalize] (the namespace
// object), which kube's RequestInfo both reads as Namespace ns: only the
// first has two path segments between the version and kube's Parts.
func inNamespaceByPath(segs []string, kube *apirequest.RequestInfo) bool {
	start := versionEnd(kube)
	if watchByPath(segs, kube) {
		start++
	}
	return kube.Namespace != "" && len(segs)-start == len(kube.Parts)+2
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
