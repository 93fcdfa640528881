package kubeapi

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what a URL under /api or /apis asks for, parsed the way
// kube-apiserver's RequestInfoFactory parses it.
type requestInfo struct {
	// Prefix is "api" (the core group) or "apis" (named groups).
	Prefix       string
	Verb         string
	GroupVersion schema.GroupVersion
	// HasVersion is false for /api and /apis, and /apis/<group>.
	HasVersion  bool
	HasGroup    bool
	Namespace   string
	Resource    string
	Name        string
	Subresource string
}

// namespaceSubresources are the subresources of a namespace itself, so that
// /namespaces/<name>/status is not read as a resource called "status".
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo returns nil for a path that is neither /api nor /apis.
func parseRequestInfo(r *http.Request) *requestInfo {
	parts := splitPath(r.URL.Path)
	if len(parts) == 0 {
		return nil
	}
	info := &requestInfo{Prefix: parts[0]}
	switch parts[0] {
	case "api":
		info.HasGroup = true
		parts = parts[1:]
	case "apis":
		parts = parts[1:]
		if len(parts) == 0 {
			break
		}
		info.HasGroup = true
		info.GroupVersion.Group = parts[0]
		parts = parts[1:]
	default:
		return nil
	}
	if len(parts) == 0 {
		return info
	}
	info.HasVersion = true
	info.GroupVersion.Version = parts[0]
	parts = parts[1:]

	watchPath := len(parts) > 0 && parts[0] == "watch"
	if watchPath {
		parts = parts[1:]
	}
	namespaceItself := false
	if len(parts) > 1 && parts[0] == "namespaces" {
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			// /namespaces/<ns>/<resource>...: a resource inside the namespace.
			info.Namespace = parts[1]
			parts = parts[2:]
		} else {
			namespaceItself = true
		}
	}
	switch {
	case namespaceItself:
		// /namespaces/<name>[/status]: the namespace object itself.
		info.Resource, info.Name = "namespaces", parts[1]
		if len(parts) > 2 {
			info.Subresource = parts[2]
		}
	default:
		if len(parts) > 0 {
			info.Resource = parts[0]
		}
		if len(parts) > 1 {
			info.Name = parts[1]
		}
		if len(parts) > 2 {
			info.Subresource = strings.Join(parts[2:], "/")
		}
	}
	info.Verb = verbFor(r, info, watchPath)
	return info
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func verbFor(r *http.Request, info *requestInfo, watchPath bool) string {
	switch r.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if info.Name == "" {
			return "deletecollection"
		}
		return "delete"
	case http.MethodGet, http.MethodHead:
		q := r.URL.Query().Get("watch")
		if watchPath || q == "1" || q == "true" {
			return "watch"
		}
		if info.Name == "" {
			return "list"
		}
		return "get"
	}
	return strings.ToLower(r.Method)
}
