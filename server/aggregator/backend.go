package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kubelab/kubelab/server/kubeapi"
)

// backend is one APIService's server: where it is, whether it answered
// its last discovery check, and what it said it serves.
type backend struct {
	name  string
	spec  apiregistrationv1.APIServiceSpec
	url   *url.URL
	token string
	proxy *httputil.ReverseProxy

	mu        sync.RWMutex
	available bool
	reason    string
	message   string
	resources *metav1.APIResourceList
}

func (b *backend) setState(ok bool, reason, message string, resources *metav1.APIResourceList) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.available, b.reason, b.message = ok, reason, message
	if resources != nil || !ok {
		b.resources = resources
	}
}

func (b *backend) condition() apiregistrationv1.APIServiceCondition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse,
		Reason: b.reason, Message: b.message, LastTransitionTime: metav1.Now()}
	if b.available {
		c.Status = apiregistrationv1.ConditionTrue
	}
	return c
}

// check asks the backend for /apis/<group>/<version>, as kube's
// available-condition controller does.
func (b *backend) check(ctx context.Context) {
	u := b.url.JoinPath("apis", b.spec.Group, b.spec.Version)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	req.Header.Set("Accept", "application/json")
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	// The check is the aggregator's own request, as in kube-apiserver.
	req.Header.Set("X-Remote-User", "system:kube-aggregator")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.setState(false, "FailedDiscoveryCheck", fmt.Sprintf("failing or missing response from %s: %v", u, err), nil)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		b.setState(false, "FailedDiscoveryCheck", fmt.Sprintf("failing or missing response from %s: bad status from %s: %d", u, u, resp.StatusCode), nil)
		return
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(body, list); err != nil {
		b.setState(false, "FailedDiscoveryCheck", fmt.Sprintf("failing or missing response from %s: %v", u, err), nil)
		return
	}
	b.setState(true, "Passed", "all checks passed", list)
}

// newProxy hands a request to the backend with the user's identity in
// kube's request headers, and no credentials of the user's own.
func newProxy(target *url.URL, token string) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			h := pr.Out.Header
			h.Del("Authorization")
			for name := range h {
				if strings.HasPrefix(strings.ToLower(name), "x-remote-") {
					h.Del(name)
				}
			}
			if token != "" {
				h.Set("Authorization", "Bearer "+token)
			}
			if user, ok := kubeapi.UserOf(pr.In); ok {
				h.Set("X-Remote-User", user.Name)
				for _, g := range user.Groups {
					h.Add("X-Remote-Group", g)
				}
				for k, vs := range user.Extra {
					for _, v := range vs {
						h.Add("X-Remote-Extra-"+url.PathEscape(k), url.PathEscape(v))
					}
				}
			}
		},
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
}

// ServeHTTP proxies to an available backend and answers 503 otherwise,
// as kube-apiserver does for an APIService that is not available.
func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.RLock()
	ok, msg := b.available, b.message
	b.mu.RUnlock()
	if !ok || b.proxy == nil {
		writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("the APIService %s is not available: %s", b.name, msg)))
		return
	}
	b.proxy.ServeHTTP(w, r)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	w.Write(body)
}

// Handler implements kubeapi.Aggregator.
func (a *Aggregator) Handler(gv schema.GroupVersion) http.Handler {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if b, ok := a.backends[gv]; ok {
		return b
	}
	return nil
}

// sortedBackends groups backends by group, versions by priority.
func (a *Aggregator) sortedBackends() map[string][]*backend {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := map[string][]*backend{}
	for _, b := range a.backends {
		out[b.spec.Group] = append(out[b.spec.Group], b)
	}
	for _, bs := range out {
		sort.Slice(bs, func(i, j int) bool {
			if bs[i].spec.VersionPriority != bs[j].spec.VersionPriority {
				return bs[i].spec.VersionPriority > bs[j].spec.VersionPriority
			}
			return bs[i].spec.Version < bs[j].spec.Version
		})
	}
	return out
}

func sortedGroups(m map[string][]*backend) []string {
	var names []string
	for g := range m {
		names = append(names, g)
	}
	sort.Strings(names)
	return names
}

// Groups implements kubeapi.Aggregator: every handed-on group, available
// or not, as kube lists them.
func (a *Aggregator) Groups() []metav1.APIGroup {
	byGroup := a.sortedBackends()
	var out []metav1.APIGroup
	for _, g := range sortedGroups(byGroup) {
		group := metav1.APIGroup{Name: g}
		for _, b := range byGroup[g] {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + b.spec.Version, Version: b.spec.Version})
		}
		group.PreferredVersion = group.Versions[0]
		out = append(out, group)
	}
	return out
}

// Discovery implements kubeapi.Aggregator: each backend's resources from
// its last check; a backend that failed it is marked stale.
func (a *Aggregator) Discovery() []apidiscoveryv2.APIGroupDiscovery {
	byGroup := a.sortedBackends()
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, g := range sortedGroups(byGroup) {
		gd := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}}
		for _, b := range byGroup[g] {
			gd.Versions = append(gd.Versions, b.versionDiscovery())
		}
		out = append(out, gd)
	}
	return out
}

func (b *backend) versionDiscovery() apidiscoveryv2.APIVersionDiscovery {
	b.mu.RLock()
	defer b.mu.RUnlock()
	v := apidiscoveryv2.APIVersionDiscovery{Version: b.spec.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessStale}
	if b.available {
		v.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
	}
	if b.resources == nil {
		return v
	}
	byName := map[string]int{}
	for _, r := range b.resources.APIResources {
		gvk := &metav1.GroupVersionKind{Group: b.spec.Group, Version: b.spec.Version, Kind: r.Kind}
		if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
			if i, found := byName[parent]; found {
				v.Resources[i].Subresources = append(v.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
					Subresource: sub, ResponseKind: gvk, Verbs: r.Verbs,
				})
			}
			continue
		}
		rd := apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: gvk, SingularResource: r.SingularName, Verbs: r.Verbs,
			ShortNames: r.ShortNames, Categories: r.Categories, Scope: apidiscoveryv2.ScopeCluster,
		}
		if r.Namespaced {
			rd.Scope = apidiscoveryv2.ScopeNamespace
		}
		byName[r.Name] = len(v.Resources)
		v.Resources = append(v.Resources, rd)
	}
	return v
}
