package pipeline

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// The headers kubectl's --as, --as-group and --as-uid send.
const (
	ImpersonateUserHeader            = "Impersonate-User"
	ImpersonateGroupHeader           = "Impersonate-Group"
	ImpersonateUIDHeader             = "Impersonate-Uid"
	ImpersonateUserExtraHeaderPrefix = "Impersonate-Extra-"
)

// Impersonate is kube-apiserver's impersonation: a request that asks to
// act as another user (kubectl --as) is served as that user, once the
// authorizer allows the real user the verb "impersonate" on each thing
// asked for (the user, or the service account; every group; the uid; each
// extra). A request that asks nothing is served as u. The trace keeps
// the real user as its User, so the request, and its denial, shows in the
// tracer of whoever sent it.
func (p *Pipeline) Impersonate(t *Trace, r *http.Request, u User) (User, error) {
	name := r.Header.Get(ImpersonateUserHeader)
	groups := r.Header.Values(ImpersonateGroupHeader)
	uid := r.Header.Get(ImpersonateUIDHeader)
	extra := map[string][]string{}
	for key, values := range r.Header {
		if k, ok := strings.CutPrefix(key, ImpersonateUserExtraHeaderPrefix); ok {
			extra[strings.ToLower(unescapeExtraKey(k))] = values
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return User{}, apierrors.NewBadRequest(fmt.Sprintf("requested %s without impersonating a user", describeAsk(groups, uid, extra)))
		}
		return u, nil
	}
	sw := StartStage(StageAuthentication, "impersonation")
	var asks []*Attributes
	// A name is a service account's only in kube's exact form,
	// system:serviceaccount:<namespace>:<name> with a valid namespace and
	// name. Anything else (a:b:c, empty or upper-case parts) is asked as a
	// user, as kube-apiserver's impersonation filter does, so a student
	// allowed to impersonate the service accounts of their namespace gets
	// 403 for it rather than a made-up identity.
	saNamespace, saName, saErr := serviceaccount.SplitUsername(name)
	if saErr == nil {
		asks = append(asks, &Attributes{Resource: "serviceaccounts", Namespace: saNamespace, Name: saName})
	} else {
		asks = append(asks, &Attributes{Resource: "users", Name: name})
	}
	for _, g := range groups {
		asks = append(asks, &Attributes{Resource: "groups", Name: g})
	}
	if uid != "" {
		asks = append(asks, &Attributes{APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid})
	}
	for key, values := range extra {
		for _, v := range values {
			asks = append(asks, &Attributes{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: key, Name: v})
		}
	}
	for _, a := range asks {
		a.User, a.Verb, a.IsResourceRequest, a.APIVersion = u, "impersonate", true, "v1"
		if p.Authz == nil {
			continue
		}
		if allowed, reason := p.Authz.Authorize(a); !allowed {
			err := Forbidden(a, reason)
			t.Add(sw.Record(Deny, err.Error()))
			return User{}, err
		}
	}
	as := User{Name: name, UID: uid, Groups: groups}
	if len(extra) > 0 {
		as.Extra = extra
	}
	switch {
	case name == AnonymousUser:
		as.Groups = appendMissing(as.Groups, AllUnauthenticated)
	default:
		if saErr == nil && len(groups) == 0 {
			as.Groups = serviceaccount.MakeGroupNames(saNamespace)
		}
		as.Groups = appendMissing(as.Groups, AllAuthenticated)
	}
	t.User, t.As = u.Name, as.Name
	t.Add(sw.Record(Allow, fmt.Sprintf("user %s impersonating %s", u.Name, as.Name)))
	return as, nil
}

func appendMissing(groups []string, g string) []string {
	for _, have := range groups {
		if have == g {
			return groups
		}
	}
	return append(groups, g)
}

// unescapeExtraKey undoes the percent-encoding client-go applies to extra
// keys that are not valid header names.
func unescapeExtraKey(k string) string {
	if u, err := url.PathUnescape(k); err == nil {
		return u
	}
	return k
}

func describeAsk(groups []string, uid string, extra map[string][]string) string {
	var parts []string
	if len(groups) > 0 {
		parts = append(parts, fmt.Sprintf("groups %v", groups))
	}
	if uid != "" {
		parts = append(parts, "uid "+uid)
	}
	if len(extra) > 0 {
		parts = append(parts, fmt.Sprintf("extra %v", extra))
	}
	return strings.Join(parts, " and ")
}
