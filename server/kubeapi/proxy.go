package kubeapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
)

// Aggregator serves the group versions kubelab hands to other API servers
// (APIServices), as kube-apiserver's aggregator does.
type Aggregator interface {
	// Handler serves every request under /apis/<group>/<version> of gv,
	// or is nil when gv is not handed on.
	Handler(gv schema.GroupVersion) http.Handler
	// Groups are the handed-on groups, for /apis.
	Groups() []metav1.APIGroup
	// Discovery is their aggregated discovery, for /apis.
	Discovery() []apidiscoveryv2.APIGroupDiscovery
}

// SetAggregator hands the aggregator's group versions to it. Requests for
// them are authenticated and authorized here first, as in kube-apiserver.
func (a *API) SetAggregator(ag Aggregator) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.aggregator = ag
}

func (a *API) aggregatorOf() Aggregator {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.aggregator
}

// proxied serves a request for a handed-on group version, once authorized;
// ok is false when gv is not handed on.
func (a *API) proxied(c echo.Context, info *requestInfo, st stages) (bool, error) {
	ag := a.aggregatorOf()
	if ag == nil || !info.HasGroup || !info.HasVersion {
		return false, nil
	}
	h := ag.Handler(info.GroupVersion)
	if h == nil {
		return false, nil
	}
	if info.Resource == "" {
		if err := st.authorizePath(c.Request()); err != nil {
			return true, err
		}
	} else if st.on() {
		attrs := &pipeline.Attributes{
			User: st.user, Verb: info.Verb, Operation: pipeline.OperationFor(info.Verb), IsResourceRequest: true,
			Path: c.Request().URL.Path, APIGroup: info.GroupVersion.Group, APIVersion: info.GroupVersion.Version,
			Resource: info.Resource, Subresource: info.Subresource, Namespace: info.kube.Namespace, Name: info.Name,
		}
		st.trace.Describe(attrs)
		if err := st.p.Authorize(st.trace, attrs); err != nil {
			return true, err
		}
	}
	h.ServeHTTP(c.Response(), c.Request())
	return true, nil
}

// UserOf is the authenticated user of a request the API hands on.
func UserOf(r *http.Request) (pipeline.User, bool) {
	_, user, ok := pipeline.FromContext(r.Context())
	return user, ok
}
