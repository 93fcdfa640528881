package kubeapi

import "strings"

// managerName is the fieldManager query parameter or, as in kube-apiserver,
// the user agent's program name ("kubectl" of "kubectl/v1.37.2 ...").
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	name, _, _ := strings.Cut(userAgent, "/")
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}
