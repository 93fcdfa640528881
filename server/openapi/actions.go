package openapi

import (
	"net/http"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/common"
)

// The routes of one resource, as k8s.io/apiserver/pkg/endpoints/installer.go
// registers them with go-restful: the same paths, operation names, docs,
// parameters, media types, responses and route metadata.

// Media types kube-apiserver's serializers offer; CBOR (and with it
// application/apply-patch+cbor) is behind the CBORServingAndStorage gate,
// alpha and off in 1.37, so it is not listed.
var (
	mediaTypes       = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	streamMediaTypes = []string{"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	allMediaTypes    = append(append([]string{}, mediaTypes...), streamMediaTypes...)
	patchMediaTypes  = []string{
		string(types.JSONPatchType),
		string(types.MergePatchType),
		string(types.StrategicMergePatchType),
		string(types.ApplyYAMLPatchType),
	}
)

const prettyDoc = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."

// Route metadata keys the builders copy into each operation.
const (
	metaGVK    = "x-kubernetes-group-version-kind"
	metaAction = "x-kubernetes-action"
)

// Installer actions (k8s.io/apiserver/pkg/endpoints/request verbs); their
// lower-case form is x-kubernetes-action.
const (
	actGet              = "GET"
	actList             = "LIST"
	actPut              = "PUT"
	actPatch            = "PATCH"
	actPost             = "POST"
	actDelete           = "DELETE"
	actDeleteCollection = "DELETECOLLECTION"
	actWatch            = "WATCH"
	actWatchList        = "WATCHLIST"
)

// endpoint is one storage path of a group version: a resource ("pods") or
// a subresource ("pods/status").
type endpoint struct {
	resource    string
	subresource string
	namespaced  bool
	verbs       map[string]bool
	kind        string                  // names operations and docs: the parent's kind for a subresource
	gvk         metav1.GroupVersionKind // the kind served here, e.g. autoscaling/v1 Scale for deployments/scale
	object      interface{}
	list        interface{}
	deleteObj   bool // DELETE returns the deleted object rather than a Status (kube's ReturnDeletedObject)
}

// action is one (verb, path) pair with the path's own parameters.
type action struct {
	verb          string
	path          string
	params        []common.Parameter
	allNamespaces bool
}

// actions lists an endpoint's actions in the installer's order.
func (e *endpoint) actions() []action {
	lister, watcher := e.verbs["list"], e.verbs["watch"]
	var scope []common.Parameter
	resourcePath := e.resource
	if e.namespaced {
		scope = []common.Parameter{pathParam("namespace", "object name and auth scope, such as for teams and projects")}
		resourcePath = "namespaces/{namespace}/" + e.resource
	}
	itemPath := resourcePath + "/{name}"
	nameParams := append(append([]common.Parameter{}, scope...), pathParam("name", "name of the "+e.gvk.Kind))
	resourceParams := scope
	if e.subresource != "" {
		itemPath += "/" + e.subresource
		resourcePath, resourceParams = itemPath, nameParams
	}
	var out []action
	add := func(ok bool, a action) {
		if ok {
			out = append(out, a)
		}
	}
	add(lister, action{verb: actList, path: resourcePath, params: resourceParams})
	add(e.verbs["create"], action{verb: actPost, path: resourcePath, params: resourceParams})
	add(e.verbs["deletecollection"], action{verb: actDeleteCollection, path: resourcePath, params: resourceParams})
	add(lister && watcher, action{verb: actWatchList, path: "watch/" + resourcePath, params: resourceParams})
	add(e.verbs["get"], action{verb: actGet, path: itemPath, params: nameParams})
	add(e.verbs["update"], action{verb: actPut, path: itemPath, params: nameParams})
	add(e.verbs["patch"], action{verb: actPatch, path: itemPath, params: nameParams})
	add(e.verbs["delete"], action{verb: actDelete, path: itemPath, params: nameParams})
	add(watcher, action{verb: actWatch, path: "watch/" + itemPath, params: nameParams})
	if e.namespaced && e.subresource == "" {
		add(lister, action{verb: actList, path: e.resource, allNamespaces: true})
		add(lister && watcher, action{verb: actWatchList, path: "watch/" + e.resource, allNamespaces: true})
	}
	return out
}

// routes returns the endpoint's routes under prefix (/api/v1, /apis/g/v).
func (e *endpoint) routes(prefix string) []common.Route {
	var out []common.Route
	for _, a := range e.actions() {
		out = append(out, e.route(prefix, a))
	}
	return out
}

// route builds one action's route; the docs and names are kube's, word
// for word, because clients and readers of the lesson compare them.
func (e *endpoint) route(prefix string, a action) *route {
	namespaced, suffix := "", ""
	if e.namespaced {
		namespaced = "Namespaced"
	}
	if a.allNamespaces {
		namespaced, suffix = "", "ForAllNamespaces"
	}
	sub := upperFirst(e.subresource)
	name := func(verb string) string { return verb + namespaced + e.kind + sub + suffix }
	r := &route{
		path:     prefix + "/" + a.path,
		params:   []common.Parameter{queryParam("pretty", prettyDoc, "string")},
		consumes: []string{"*/*"},
		produces: mediaTypes,
	}
	switch a.verb {
	case actGet, actList, actWatch:
		e.readRoute(r, a.verb, name)
	case actWatchList:
		// The one name with a suffix after the subresource.
		e.readRoute(r, a.verb, func(string) string { return "watch" + namespaced + e.kind + sub + "List" + suffix })
	default:
		e.writeRoute(r, a.verb, name)
	}
	r.params = append(r.params, a.params...)
	r.metadata = map[string]interface{}{metaGVK: e.gvk, metaAction: strings.ToLower(a.verb)}
	return r
}

// doc picks the installer's doc string for a resource or a subresource.
func (e *endpoint) doc(plain, withSub string) string {
	if e.subresource != "" {
		return withSub
	}
	return plain
}

// readRoute fills in GET, LIST, WATCH and WATCHLIST routes.
func (e *endpoint) readRoute(r *route, verb string, name func(string) string) {
	r.method = http.MethodGet
	switch verb {
	case actGet:
		r.operation = name("read")
		r.doc = e.doc("read the specified "+e.kind, "read "+e.subresource+" of the specified "+e.kind)
		r.returns(http.StatusOK, "OK", e.object)
		r.writes = e.object
		return
	case actList:
		r.operation = name("list")
		r.doc = e.doc("list objects of kind "+e.kind, "list "+e.subresource+" of objects of kind "+e.kind)
		if e.verbs["watch"] {
			r.doc = e.doc("list or watch objects of kind "+e.kind, "list or watch "+e.subresource+" of objects of kind "+e.kind)
		}
		r.returns(http.StatusOK, "OK", e.list)
		r.writes = e.list
	case actWatch:
		r.operation = name("watch")
		r.doc = e.doc("watch changes to an object of kind "+e.kind, "watch changes to "+e.subresource+" of an object of kind "+e.kind) +
			". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
	case actWatchList:
		r.operation = name("watch")
		r.doc = e.doc("watch individual changes to a list of "+e.kind, "watch individual changes to a list of "+e.subresource+" of "+e.kind) +
			". deprecated: use the 'watch' parameter with a list operation instead."
	}
	if verb != actList {
		r.returns(http.StatusOK, "OK", metav1.WatchEvent{})
		r.writes = metav1.WatchEvent{}
	}
	r.produces = allMediaTypes
	r.params = append(r.params, optionParams(metav1.ListOptions{})...)
}

// writeRoute fills in PUT, PATCH, POST, DELETE and DELETECOLLECTION routes.
func (e *endpoint) writeRoute(r *route, verb string, name func(string) string) {
	article := articleFor(e.kind)
	switch verb {
	case actPut:
		r.method, r.operation = http.MethodPut, name("replace")
		r.doc = e.doc("replace the specified "+e.kind, "replace "+e.subresource+" of the specified "+e.kind)
		r.returns(http.StatusOK, "OK", e.object)
		r.returns(http.StatusCreated, "Created", e.object)
		r.body(e.object, true)
		r.writes = e.object
		r.params = append(r.params, optionParams(metav1.UpdateOptions{})...)
	case actPatch:
		r.method, r.operation = http.MethodPatch, name("patch")
		r.doc = e.doc("partially update the specified "+e.kind, "partially update "+e.subresource+" of the specified "+e.kind)
		r.consumes = patchMediaTypes
		r.returns(http.StatusOK, "OK", e.object)
		r.returns(http.StatusCreated, "Created", e.object) // server-side apply may create
		r.body(metav1.Patch{}, true)
		r.writes = e.object
		r.params = append(r.params, optionParams(metav1.PatchOptions{})...)
	case actPost:
		r.method, r.operation = http.MethodPost, name("create")
		r.doc = e.doc("create"+article+e.kind, "create "+e.subresource+" of"+article+e.kind)
		r.returns(http.StatusOK, "OK", e.object)
		r.returns(http.StatusCreated, "Created", e.object)
		r.returns(http.StatusAccepted, "Accepted", e.object)
		r.body(e.object, true)
		r.writes = e.object
		r.params = append(r.params, optionParams(metav1.CreateOptions{})...)
	case actDelete:
		var returned interface{} = metav1.Status{}
		if e.deleteObj {
			returned = e.object
		}
		r.method, r.operation = http.MethodDelete, name("delete")
		r.doc = e.doc("delete"+article+e.kind, "delete "+e.subresource+" of"+article+e.kind)
		r.writes = returned
		r.returns(http.StatusOK, "OK", returned)
		r.returns(http.StatusAccepted, "Accepted", returned)
		r.body(metav1.DeleteOptions{}, false)
		r.params = append(r.params, optionParams(metav1.DeleteOptions{})...)
	case actDeleteCollection:
		r.method, r.operation = http.MethodDelete, name("deletecollection")
		r.doc = e.doc("delete collection of "+e.kind, "delete collection of "+e.subresource+" of a "+e.kind)
		r.writes = metav1.Status{}
		r.returns(http.StatusOK, "OK", metav1.Status{})
		r.body(metav1.DeleteOptions{}, false)
		r.params = append(r.params, optionParams(metav1.DeleteOptions{})...)
		r.params = append(r.params, optionParams(metav1.ListOptions{}, "watch", "allowWatchBookmarks")...)
	}
}

// optionParams turns the top-level scalar fields of an options type into
// query parameters named by their JSON names and documented by the type's
// SwaggerDoc, as the installer's AddObjectParams does; reading them from
// apimachinery keeps the list (dryRun, fieldValidation, sendInitialEvents...)
// exactly the one this apimachinery version accepts.
func optionParams(obj interface{ SwaggerDoc() map[string]string }, exclude ...string) []common.Parameter {
	docs := obj.SwaggerDoc()
	t := reflect.TypeOf(obj)
	var out []common.Parameter
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct || ft.Kind() == reflect.Interface {
			continue // TypeMeta, Preconditions: not expressible as a query parameter
		}
		jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if jsonName == "" || jsonName == "-" || contains(exclude, jsonName) {
			continue
		}
		out = append(out, queryParam(jsonName, docs[jsonName], jsonType(ft)))
	}
	return out
}

// jsonType is the OpenAPI type of a query parameter's Go type; a list
// ([]string dryRun) is documented as its element type, as kube does.
func jsonType(t reflect.Type) string {
	if t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	default:
		return "string"
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// articleFor returns " a ", " an " or, for plurals, " " (the installer's
// GetArticleForNoun): "create a Pod", "create an Event", "create Endpoints".
func articleFor(noun string) string {
	if noun == "" || (strings.HasSuffix(noun, "s") && !strings.HasSuffix(noun, "ss")) {
		return " "
	}
	if strings.ContainsRune("aeiouAEIOU", rune(noun[0])) {
		return " an "
	}
	return " a "
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
