package commands_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// expectation is what one command must do: its exit status and what its
// output must match. Keys are the commands as the lesson (in
// internals-demo) and the labs (with NS) write them; in the output's
// patterns NS stands for the reader's namespace.
type expectation struct {
	exit   int
	output []string
	// timeout ends a long-running command (a watch) after that long, as a
	// student's Ctrl-C does; kubectl then exits 124 under timeout(1).
	timeout time.Duration
	// background runs a lab step's long-running command while the lab's
	// next steps are done, and checks its output at the lab's end.
	background bool
	// capture names a placeholder of a later step's command (RV) that
	// this command's output fills in, as the student copies it; extract
	// names values the student reads off the output (a bookmark's
	// resourceVersion, a 410's Y), each the first group of its pattern,
	// for a later question ("$NAME" in answers).
	capture string
	extract map[string]string
	// notOnKubelab is why the command cannot run on kubelab at all, and
	// etcdInClass marks an etcdctl command, which a student in a class
	// cannot run: they have no access to etcd. Each page marks both.
	notOnKubelab string
	kindMark     string // the i18n key of the page's note for it
	etcdInClass  bool
	// instructorInClass marks a command that needs rights beyond a
	// student's namespace (a CRD is cluster-wide); the page says so.
	instructorInClass bool
	// passVia passes a step that cannot pass from the terminal the way
	// the step says: in the browser.
	passVia func(t *testing.T, r *reader)
	// lessonNeeds runs a lesson command that is also a lab step's in the
	// lesson too: a later command of the lesson reads what it makes.
	lessonNeeds bool
}

// cannotRun is why the command is skipped for r, or "".
func (e expectation) cannotRun(r *reader) string {
	switch {
	case e.notOnKubelab != "":
		return e.notOnKubelab
	case e.etcdInClass && r.student:
		return "etcdctl talks to etcd itself, and students in a class have no access to etcd: the page says so and points to the inspector"
	case e.instructorInClass && r.student:
		return "a CRD is cluster-wide, beyond a student's rights: the page says these commands are the instructor's in a class"
	}
	return ""
}

// pageMark is what the page in lang shows beside a command that cannot
// run for r, or "".
func (e expectation) pageMark(r *reader, lang i18n.Lang) string {
	switch {
	case e.notOnKubelab != "":
		return web.T(lang, e.kindMark)
	case e.etcdInClass && r.student:
		return web.T(lang, "run.etcd")
	case e.instructorInClass && r.student:
		return i18n.Text{EN: "these three commands are the instructor's to run", TH: "สามคำสั่งนี้เป็นของผู้สอน"}.In(lang)
	}
	return ""
}

// rewrite adapts a command to the test's kubelab, and only where it must:
// its etcd listens on a free port, not on 127.0.0.1:2379, and its watch
// cache drops events after windowFreshness, not kube's 75 s.
func (r *reader) rewrite(line string) string {
	u, _ := url.Parse(r.lab.EtcdURL)
	line = strings.ReplaceAll(line, "--endpoints=127.0.0.1:2379", "--endpoints="+u.Host)
	return strings.ReplaceAll(line, "sleep 76", windowSleep)
}

// A namespace's pods, as kubectl lists them.
const podTable = `(?m)^NAME +READY +STATUS +RESTARTS +AGE$[\s\S]*^ssa-demo +`

// The notes the pages show for what cannot run here.
const (
	kindOnly = "the source's kind cluster runs etcd as a Pod in kube-system; kubelab runs etcd in its own process, so there is no etcd Pod to list or exec into (the page shows the recorded output and says so)"
)

// inspector passes the etcd lab's read-key step as the step says it
// passes: by reading the pod's key in the browser's etcd inspector.
func inspector(t *testing.T, r *reader) {
	code, body := r.do("GET", "/ui/etcd/value?key="+url.QueryEscape("/registry/pods/"+r.ns+"/ssa-demo"), "")
	if code != http.StatusOK || !strings.Contains(body, "ssa-demo") {
		t.Fatalf("the inspector's read of the pod's key: HTTP %d: %.300s", code, body)
	}
}

var expectations = map[string]expectation{
	// The request path.
	"kubectl -n internals-demo get pods":                                      {output: []string{podTable}},
	"kubectl -n internals-demo label pod ssa-demo demo-round=fix --overwrite": {output: []string{`^pod/ssa-demo labeled\n$`}},
	"kubectl get pods -n internals-demo -v=9": {output: []string{
		`curlCommand=<\s+curl -v -XGET .*'https?://127\.0\.0\.1:\d+/api/v1/namespaces/NS/pods\?limit=500'`,
		`"Response" verb="GET" url=".*/api/v1/namespaces/NS/pods\?limit=500" status="200 OK"`,
		`"Response Body" body=<\s+\{"kind":"Table"`, podTable}},

	// resourceVersion and watch.
	"kubectl get --raw /api/v1/namespaces/internals-demo/pods | jq -r .metadata.resourceVersion": {output: []string{`^[1-9][0-9]*\n$`}},
	"kubectl -n internals-demo get pods -o json | jq -c '{kind, metadata}'":                      {output: []string{`^\{"kind":"List","metadata":\{"resourceVersion":""\}\}\n$`}},
	"kubectl get --raw /api/v1/namespaces/internals-demo/pods | jq -c '{kind, metadata}'":        {output: []string{`^\{"kind":"PodList","metadata":\{"resourceVersion":"[1-9][0-9]*"\}\}\n$`}},
	"kubectl -n internals-demo get pods --watch --output-watch-events": {exit: 124, timeout: watchFor,
		output: []string{`(?m)^EVENT +NAME +READY +STATUS +RESTARTS +AGE$`, `(?m)^ADDED +ssa-demo +`}},
	"kubectl -n internals-demo label pod ssa-demo demo-round=one --overwrite   # run from a second terminal": {output: []string{`^pod/ssa-demo labeled\n$`}},
	// The same command on the Thai page, run after the English one: the
	// label already has that value, so kubectl changes nothing, as the
	// lesson says.
	"kubectl -n internals-demo label pod ssa-demo demo-round=one --overwrite   # รันจาก terminal ที่สอง": {output: []string{`^pod/ssa-demo not labeled\n$`}},
	`kubectl -v=6 -n internals-demo get pods --watch 2>&1 | grep '"Response"'`: {timeout: watchFor, output: []string{
		`"Response" verb="GET" url=".*/api/v1/namespaces/NS/pods\?limit=500" status="200 OK"`,
		`"Response" verb="GET" url=".*/api/v1/namespaces/NS/pods\?resourceVersion=[1-9][0-9]*&watch=true" status="200 OK"`}},
	"kubectl -v=6 -n internals-demo get pods 2>&1 | grep WatchListClient": {output: []string{`"Feature gate default state" feature="WatchListClient" enabled=true`}},
	`kubectl get --raw "/api/v1/namespaces/internals-demo/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=6" | jq -c '[.type, .object.metadata.resourceVersion, .object.metadata.annotations]'`: {output: []string{
		`(?m)^\["ADDED","[1-9][0-9]*",`, `(?m)^\["BOOKMARK","[1-9][0-9]*",\{"k8s.io/initial-events-end":"true"\}\]$`}},
	`kubectl get --raw "/api/v1/namespaces/internals-demo/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=6"`: {output: []string{
		`(?m)^\{"type":"ADDED","object":\{"kind":"Pod".*"name":"ssa-demo","namespace":"NS"`,
		`(?m)^\{"type":"BOOKMARK","object":\{.*"annotations":\{"k8s.io/initial-events-end":"true"\}`}},
	`kubectl get --raw "/api/v1/namespaces/internals-demo/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=6" | grep BOOKMARK`: {output: []string{
		`^\{"type":"BOOKMARK","object":\{.*"k8s.io/initial-events-end":"true"`}},

	// 410 Gone.
	`kubectl get --raw "/api/v1/namespaces/internals-demo/pods?watch=1&resourceVersion=1&timeoutSeconds=6"`: {output: []string{
		`^\{"type":"ERROR","object":\{"kind":"Status","apiVersion":"v1","metadata":\{\},"status":"Failure","message":"too old resource version: 1 \([1-9][0-9]*\)","reason":"Expired","code":410\}\}\n$`}},
	`kubectl get --raw "/api/v1/namespaces/internals-demo/pods?resourceVersion=5&resourceVersionMatch=Exact"`: {exit: 1, output: []string{
		`^Error from server \(Expired\): The resourceVersion for the provided list is too old\.\n$`}},

	// etcd.
	"kubectl -n kube-system get pods | grep etcd":                                 {notOnKubelab: kindOnly, kindMark: "run.offline"},
	"kubectl -n kube-system exec etcd-internals-control-plane -- etcdctl version": {notOnKubelab: kindOnly, kindMark: "run.offline"},
	"kubectl -n kube-system exec etcd-internals-control-plane -- etcdctl \\\n    --endpoints=https://127.0.0.1:2379 \\\n    --cacert=/etc/kubernetes/pki/etcd/ca.crt \\\n    --cert=/etc/kubernetes/pki/etcd/server.crt \\\n    --key=/etc/kubernetes/pki/etcd/server.key \\\n    get /registry/pods/internals-demo/ssa-demo": {
		notOnKubelab: kindOnly + "; Run it live runs its raw equivalent, etcdctl get, tested below", kindMark: "run.raw"},
	"etcdctl get /registry/pods/internals-demo/ssa-demo": {etcdInClass: true, output: []string{`^/registry/pods/NS/ssa-demo\nk8s\x00\n`, `ssa-demo`}},
	"etcdctl --endpoints=127.0.0.1:2379 get /registry/configmaps/internals-demo/kube-root-ca.crt --print-value-only | head -c 24 | od -c": {etcdInClass: true,
		output: []string{`^0000000 +k +8 +s +\\0 `}},
	"etcdctl --endpoints=127.0.0.1:2379 get /registry/pods/internals-demo/ssa-demo --print-value-only | head -c 24 | od -c": {etcdInClass: true,
		output: []string{`^0000000 +k +8 +s +\\0 `}},
	crdApply:  {instructorInClass: true, output: []string{`^customresourcedefinition.apiextensions.k8s.io/notes.lab.example.com created\n$`}},
	noteApply: {instructorInClass: true, lessonNeeds: true, output: []string{`^note.lab.example.com/hello created\n$`}},
	"etcdctl --endpoints=127.0.0.1:2379 get /registry/lab.example.com/notes/internals-demo/hello": {etcdInClass: true,
		output: []string{`^/registry/lab.example.com/notes/NS/hello\n\{"apiVersion":"lab.example.com/v1","kind":"Note",.*"spec":\{"text":"stored as JSON"\}\}\n`}},

	// Adding API groups.
	"kubectl get --raw /apis | jq -r '.groups[].name'":               {output: []string{`(?m)^apiextensions\.k8s\.io$`, `(?m)^apiregistration\.k8s\.io$`, `(?m)^metrics\.k8s\.io$`}},
	"kubectl get --raw /openapi/v3 | jq -r '.paths | keys | .[0:6]'": {output: []string{`^\[\n  "api",\n  "api/v1",\n  "apis",\n`}},
	"kubectl explain pod.spec.containers.ports":                      {output: []string{`(?m)^FIELD: ports <\[\]ContainerPort>$`, `containerPort\s+<integer> -required-`}},
	`kubectl get --raw /openapi/v3/api/v1 | jq -c '.components.schemas["io.k8s.api.core.v1.PodSpec"].properties.containers | {"x-kubernetes-list-map-keys", "x-kubernetes-list-type"}'`: {
		// The keys in sorted order, which jq and the page's gojq (which
		// sorts an object's keys) both print in that order.
		output: []string{`^\{"x-kubernetes-list-map-keys":\["name"\],"x-kubernetes-list-type":"map"\}\n$`}},

	// The labs' commands that the lesson does not have as such.
	// Stopped with Ctrl-C once the lab is done (kubectl then exits 1); the
	// timeout only bounds it. The watch was open when the next step
	// changed the pod's label.
	"kubectl -n NS get pods --watch --output-watch-events": {exit: 1, timeout: 60 * time.Second, background: true,
		output: []string{`(?m)^EVENT +NAME`, `(?m)^ADDED +ssa-demo +`, `(?m)^MODIFIED +ssa-demo +`}},
	"kubectl -n NS label pod ssa-demo demo-round=$(date +%s) --overwrite":            {output: []string{`^pod/ssa-demo labeled\n$`}},
	"kubectl get --raw /api/v1/namespaces/NS/pods | jq -r .metadata.resourceVersion": {output: []string{`^[1-9][0-9]*\n$`}, capture: "RV"},
	`kubectl get --raw "/api/v1/namespaces/NS/pods?watch=1&timeoutSeconds=6&allowWatchBookmarks=true"`: {output: []string{
		`(?m)^\{"type":"ADDED","object":\{"kind":"Pod"`, `(?m)^\{"type":"BOOKMARK","object":\{"apiVersion":"v1","kind":"Pod","metadata":\{"annotations":\{"k8s.io/initial-events-end":"true"\},"resourceVersion":"[1-9][0-9]*"\}\}\}$`},
		extract: map[string]string{"BOOKMARK_RV": `"type":"BOOKMARK".*"resourceVersion":"([0-9]+)"`}},
	`kubectl get --raw "/api/v1/namespaces/NS/pods?watch=1&resourceVersion=RV&timeoutSeconds=6"`: {output: []string{`^$`}},
	// The lesson's form of the gone lab's window command, which runs on
	// that lab's step.
	strings.ReplaceAll(goneWindow, "NS", web.DemoNamespace): {output: []string{`^(pod/ssa-demo labeled\n){121}$`}},
	goneWindow: {output: []string{`^(pod/ssa-demo labeled\n){121}$`}},
	`kubectl get --raw "/api/v1/namespaces/NS/pods?watch=1&resourceVersion=1&timeoutSeconds=6"`: {output: []string{
		`"message":"too old resource version: 1 \([1-9][0-9]*\)","reason":"Expired","code":410`},
		extract: map[string]string{"GONE_Y": `too old resource version: 1 \(([0-9]+)\)`}},
	"etcdctl get /registry/pods/NS/ssa-demo -w json | jq .kvs[0].mod_revision": {etcdInClass: true, output: []string{`^[1-9][0-9]*\n$`}, capture: "MODREV"},
	// The extend lab's custom resource: in a class, the instructor has
	// applied the CRD and let students' edit role create Notes.
	strings.ReplaceAll(noteApply, web.DemoNamespace, "NS"):                       {output: []string{`^note.lab.example.com/hello created\n$`}},
	"etcdctl get /registry/pods/NS/ssa-demo":                                     {etcdInClass: true, output: []string{`^/registry/pods/NS/ssa-demo\nk8s\x00\n`}, passVia: inspector},
	"kubectl explain pod.spec.containers.image":                                  {output: []string{`(?m)^FIELD: image <string>$`}},
	"kubectl get --raw /apis/metrics.k8s.io/v1beta1 | jq -r '.resources[].name'": {output: []string{`^namespacemetrics\n$`}},
	"kubectl -n NS run lab-pod --image=nginx:1.27":                               {output: []string{`^pod/lab-pod created\n$`}},
	"kubectl --as=system:serviceaccount:NS:default -n kube-system get pods": {exit: 1, output: []string{
		`^Error from server \(Forbidden\): pods is forbidden: User "system:serviceaccount:NS:default" cannot list resource "pods" in API group "" in the namespace "kube-system"`}},
}

// The lesson's and the labs' longer commands.
const (
	crdApply  = "kubectl apply -f - <<'EOF'\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: notes.lab.example.com}\nspec:\n  group: lab.example.com\n  scope: Namespaced\n  names: {plural: notes, singular: note, kind: Note}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {text: {type: string}}}}}}\nEOF"
	noteApply = "kubectl -n internals-demo create -f - <<'EOF'\n{\"apiVersion\": \"lab.example.com/v1\", \"kind\": \"Note\", \"metadata\": {\"name\": \"hello\"}, \"spec\": {\"text\": \"stored as JSON\"}}\nEOF"
	// The gone lab's window: one change, 76 s for it to age past kube's
	// 75 s, then enough changes to fill the window.
	goneWindow = "kubectl -n NS label pod ssa-demo round=start --overwrite; sleep 76; for i in $(seq 120); do kubectl -n NS label pod ssa-demo round=$i --overwrite; done"
)

// answers are the right answers of the labs' question steps.
var answers = map[string]string{
	"etcd/prefix":  `k8s\x00`,
	"etcd/why-not": "skips",
	"extend/where": "crd-here",
	// What only that student can know, read off their own output.
	"bookmarks/bookmark-rv": "$BOOKMARK_RV",
	"gone/window-start":     "$GONE_Y",
	"etcd/mod-revision":     "$MODREV",
}

// watchFor is how long the lesson's watches run before timeout(1) ends
// them: kubectl must start, list, print and open its watch within it, on
// a loaded machine where one kubectl run takes half a second or more.
const watchFor = 10 * time.Second
