package webui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/inspect"
)

// maxKeys bounds one key listing.
const maxKeys = 300

// etcdReader is what a user may read straight from etcd. Reading etcd
// skips RBAC, so the inspector asks RBAC first, through the API: whoever
// may list secrets in every namespace (the local user, who is
// cluster-admin; admins) may read every key; whoever may list pods in
// their own namespace reads the keys of that namespace's objects; anyone
// else nothing.
type etcdReader struct {
	all bool
	ns  string
	// inNamespace are the key prefixes of ns's objects, one for each
	// resource the API serves in namespaces: <prefix><ns>/, followed by
	// the object's name. Joined once per reader, not once per key.
	inNamespace []string
}

func (u *UI) etcdReaderFor(c echo.Context) etcdReader {
	if u.allowed(c, "/api/v1/secrets?limit=1") {
		return etcdReader{all: true}
	}
	ns := namespace(c)
	if u.allowed(c, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods?limit=1") {
		return etcdReader{ns: ns, inNamespace: u.namespacePrefixes(ns)}
	}
	return etcdReader{}
}

// namespacePrefixes are the key prefixes of ns's objects, for the
// namespaced resources the API serves now, custom ones included. A key's
// place in the path alone
// does not say whether it names a namespace: a cluster-scoped custom
// resource's /registry/course.example/examkeys/final-exam has a namespaced
// one's shape, and a student called examkeys read it.
func (u *UI) namespacePrefixes(ns string) []string {
	var out []string
	if u.API == nil {
		// The kube core's resources are not kubelab's registry's: none.
		return nil
	}
	for _, r := range u.API.Registry().All() {
		if r.Namespaced {
			out = append(out, storage.ResourcePrefix(r.GroupResource(), r.Custom || r.GroupInKey)+"/"+ns+"/")
		}
	}
	return out
}

// mayRead says whether the reader may read key.
func (er etcdReader) mayRead(key string) bool {
	if !strings.HasPrefix(key, storage.RootPrefix) {
		return false
	}
	if er.all {
		return true
	}
	if er.ns == "" {
		return false
	}
	for _, prefix := range er.inNamespace {
		name, ok := strings.CutPrefix(key, prefix)
		if ok && name != "" && !strings.Contains(name, "/") {
			return true
		}
	}
	return false
}

// statusJSON is a Status error with code and msg, which the server's
// error handler writes as kube-apiserver would.
func (u *UI) statusJSON(c echo.Context, code int, msg string) error {
	st := apierrors.NewGenericServerResponse(code, c.Request().Method, schema.GroupResource{}, "", msg, 0, false).ErrStatus
	st.Message = msg
	return &apierrors.StatusError{ErrStatus: st}
}

// etcdKeys lists the keys under a prefix of /registry/ that the user may read.
func (u *UI) etcdKeys(c echo.Context) error {
	prefix := c.QueryParam("prefix")
	if !strings.HasPrefix(prefix, storage.RootPrefix) {
		prefix = storage.RootPrefix
	}
	er := u.etcdReaderFor(c)
	if !er.all && er.ns == "" {
		return u.statusJSON(c, http.StatusForbidden, "reading etcd skips RBAC: you need to be allowed to list pods in your namespace")
	}
	if !er.all && prefix == storage.RootPrefix {
		prefix = storage.RootPrefix + "pods/" + er.ns + "/"
	}
	resp, err := u.Etcd.Get(c.Request().Context(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(4*maxKeys))
	if err != nil {
		u.Logger.Warn("inspector: listing keys", "error", err)
		return u.statusJSON(c, http.StatusServiceUnavailable, "etcd did not answer")
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); er.mayRead(k) && len(keys) < maxKeys {
			keys = append(keys, k)
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"keys": keys, "revision": resp.Header.Revision})
}

// valueMsg is one etcd value, decoded.
type valueMsg struct {
	Key         string          `json:"key"`
	ModRevision int64           `json:"modRevision"`
	Size        int             `json:"size"`
	Raw         []byte          `json:"raw"`
	PrefixLen   int             `json:"prefixLen"`
	APIVersion  string          `json:"apiVersion,omitempty"`
	Kind        string          `json:"kind,omitempty"`
	Fields      []inspect.Field `json:"fields"`
	DecodeError string          `json:"decodeError,omitempty"`
	JSON        string          `json:"json,omitempty"`
	APIPath     string          `json:"apiPath,omitempty"`
}

// etcdValue reads one key straight from etcd, decodes it and puts the
// JSON the API returns for the same object beside it.
func (u *UI) etcdValue(c echo.Context) error {
	key := c.QueryParam("key")
	if !u.etcdReaderFor(c).mayRead(key) {
		return u.statusJSON(c, http.StatusForbidden, "you may read only the keys of your own namespace's objects under /registry/")
	}
	resp, err := u.Etcd.Get(c.Request().Context(), key)
	if err != nil {
		return u.statusJSON(c, http.StatusServiceUnavailable, "etcd did not answer")
	}
	if len(resp.Kvs) == 0 {
		return u.statusJSON(c, http.StatusNotFound, "no such key: "+key)
	}
	kv := resp.Kvs[0]
	out := valueMsg{Key: key, ModRevision: kv.ModRevision, Size: len(kv.Value), Raw: kv.Value}
	v, err := inspect.Decode(kv.Value, u.typeOf)
	out.PrefixLen, out.APIVersion, out.Kind, out.Fields = v.PrefixLen, v.APIVersion, v.Kind, v.Fields
	if err != nil {
		out.DecodeError = err.Error()
	}
	if path := u.apiPath(key); path != "" {
		out.APIPath = path
		ctx := c.Request().Context()
		rec, err := u.do(u.request(ctx, callerOf(c.Request()), http.MethodGet, path, "", "", nil))
		if err != nil {
			return u.statusJSON(c, http.StatusServiceUnavailable, "the API did not answer")
		}
		out.JSON = prettyJSON(rec.Body)
	}
	return c.JSON(http.StatusOK, out)
}

// typeOf names a stored kind's Go type, for the decoder's field names.
func (u *UI) typeOf(apiVersion, kind string) reflect.Type {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	obj, err := kubeapi.Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	return reflect.TypeOf(obj)
}

// apiPath is the API path of the object stored at key, if a served
// resource keeps its objects there.
func (u *UI) apiPath(key string) string {
	rest := strings.TrimPrefix(key, storage.RootPrefix)
	for _, r := range u.API.Registry().All() {
		// A version stored as another (events.k8s.io/v1 events are core
		// events in etcd) is not where its keys' objects come from.
		// Custom resources (and a few built-in kinds) keep their group
		// in the key: /registry/<group>/<resource>/...
		prefix := strings.TrimPrefix(storage.ResourcePrefix(r.GroupResource(), r.Custom || r.GroupInKey), storage.RootPrefix) + "/"
		if r.Kind == "" || r.Codec != nil || !strings.HasPrefix(rest, prefix) {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(rest, prefix), "/")
		base := "/api/" + r.GroupVersion.Version
		if r.GroupVersion.Group != "" {
			base = "/apis/" + r.GroupVersion.Group + "/" + r.GroupVersion.Version
		}
		switch {
		case r.Namespaced && len(parts) == 2:
			return base + "/namespaces/" + url.PathEscape(parts[0]) + "/" + r.Name + "/" + url.PathEscape(parts[1])
		case !r.Namespaced && len(parts) == 1:
			return base + "/" + r.Name + "/" + url.PathEscape(parts[0])
		}
	}
	return ""
}

var _ = json.Marshal
