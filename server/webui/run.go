package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/storage"
)

// The Accept headers kubectl sends, as kubectl -v=8 shows them: a table for
// kubectl get's printed output, JSON for -o json and for label's GET and
// PATCH, and "application/json, */*" for kubectl get --raw.
const (
	tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	jsonAccept  = "application/json"
	rawAccept   = "application/json, */*"
)

// maxLine bounds one streamed line shown in the browser.
const maxLine = 600

// liveCommands are the lesson's runnable commands, by the id its content
// gives them (web.LiveCommands). Each sends, in order, exactly the requests
// kubectl sends for the lesson's command line (method, path, query, Accept,
// body; kubectl -v=8 shows them), in the reader's namespace, and shows the
// answer as the command prints it. Discovery, which kubectl caches, is left
// out. run_test.go compares each with the real kubectl.
var liveCommands = map[string]func(r *runner){
	// kubectl get pods -n NS -v=9
	"list-table": func(r *runner) {
		if body, ok := r.do("GET", r.pods("?limit=500"), tableAccept, "", nil); ok {
			r.show(showTable(body, ""))
		}
	},
	// kubectl get --raw /api/v1/namespaces/NS/pods | jq -r .metadata.resourceVersion
	"list-rv": func(r *runner) {
		if body, ok := r.do("GET", r.pods(""), rawAccept, "", nil); ok {
			var l struct {
				Metadata struct{ ResourceVersion string } `json:"metadata"`
			}
			err := json.Unmarshal(body, &l)
			r.show([]string{l.Metadata.ResourceVersion}, err)
		}
	},
	// kubectl -n NS get pods --watch --output-watch-events: a list, printed
	// as ADDED by kubectl itself, then a watch from the list's resourceVersion.
	"watch-pods": func(r *runner) {
		body, ok := r.do("GET", r.pods("?limit=500"), tableAccept, "", nil)
		if !ok {
			return
		}
		lines, err := showTable(body, "ADDED")
		if !r.show(lines, err) {
			return
		}
		var list struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		if err := json.Unmarshal(body, &list); err != nil || list.Metadata.ResourceVersion == "" {
			r.fail("the list has no resourceVersion to watch from")
			return
		}
		r.stream(r.pods("?resourceVersion="+url.QueryEscape(list.Metadata.ResourceVersion)+"&watch=true"), tableAccept, tableEvent)
	},
	// kubectl -n NS label pod ssa-demo demo-round=VALUE --overwrite: a GET,
	// then a merge patch of what changed, or no PATCH when nothing would.
	"label-pod": func(r *runner) {
		body, ok := r.do("GET", r.pods("/ssa-demo"), jsonAccept, "", nil)
		if !ok {
			return
		}
		var pod struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &pod); err != nil {
			r.fail("reading the pod: " + err.Error())
			return
		}
		if old, ok := pod.Metadata.Labels["demo-round"]; ok && old == r.value {
			r.show([]string{"pod/ssa-demo not labeled"}, nil)
			return
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"demo-round": r.value}}})
		if err != nil {
			r.fail(err.Error())
			return
		}
		if _, ok := r.do("PATCH", r.pods("/ssa-demo?fieldManager=kubectl-label"), jsonAccept, "application/merge-patch+json", patch); ok {
			r.show([]string{"pod/ssa-demo labeled"}, nil)
		}
	},
	// kubectl get --raw "...": one GET, its query in the order kubectl
	// sends it (sorted by key, as url.Values encodes it).
	"watch-bookmarks": func(r *runner) {
		r.stream(r.pods("?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=6&watch=1"), rawAccept, nil)
	},
	"watch-gone": func(r *runner) {
		r.stream(r.pods("?resourceVersion=1&timeoutSeconds=6&watch=1"), rawAccept, nil)
	},
	// kubectl get --raw /apis | jq -r '.groups[].name'
	"apis": func(r *runner) {
		if body, ok := r.do("GET", "/apis", rawAccept, "", nil); ok {
			var l struct {
				Groups []struct{ Name string } `json:"groups"`
			}
			err := json.Unmarshal(body, &l)
			var out []string
			for _, g := range l.Groups {
				out = append(out, g.Name)
			}
			r.show(out, err)
		}
	},
	// kubectl get --raw /openapi/v3 | jq -r '.paths | keys | .[0:6]'
	"openapi": func(r *runner) {
		if body, ok := r.do("GET", "/openapi/v3", rawAccept, "", nil); ok {
			r.show(firstPaths(body))
		}
	},
}

func firstPaths(b []byte) ([]string, error) {
	var d struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(d.Paths))
	for k := range d.Paths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out, err := json.MarshalIndent(keys[:min(6, len(keys))], "", "  ")
	return strings.Split(string(out), "\n"), err
}

type requestMsg struct {
	T       string            `json:"t"`
	Line    string            `json:"line"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body,omitempty"`
}

type responseMsg struct {
	T       string            `json:"t"`
	Status  string            `json:"status"`
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
}

// lineMsg is one line: of the raw response body (T "body"), or of what
// the command prints from it (T "line"), which the page shows apart,
// each labelled.
type lineMsg struct {
	T    string `json:"t"`
	Text string `json:"text"`
	Type string `json:"type,omitempty"`
}

// failedMsg leads the answer of a request that failed: its status and the
// Status's message, at the top, where the reader looks first.
type failedMsg struct {
	T       string `json:"t"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

type endMsg struct {
	T       string `json:"t"`
	Message string `json:"message,omitempty"`
}

// runStream runs one lesson command live: the requests it makes, real
// HTTP requests to kubelab's own listener with the browser's credential,
// in the reader's namespace, and the real responses, streamed until they
// end or the reader stops them.
func (u *UI) runStream(c echo.Context) error {
	cmd, ok := liveCommands[c.QueryParam("cmd")]
	r := &runner{u: u, value: c.QueryParam("value"), ns: namespace(c), from: callerOf(c.Request())}
	cl, accepted := u.accept(c, smallSocket)
	if !accepted {
		return nil
	}
	r.cl = cl
	etcdGet := c.QueryParam("cmd") == "etcd-get"
	var reader etcdReader
	if etcdGet {
		reader = u.etcdReaderFor(c)
	}
	go func() {
		switch {
		case etcdGet:
			u.runEtcdGet(cl, reader, r.ns)
		case !ok:
			cl.Send(endMsg{T: "error", Message: "no such command"})
		default:
			cmd(r)
		}
		cl.Send(endMsg{T: "end"})
		cl.Finish()
	}()
	u.serve(cl, nil)
	return nil
}

// runner sends one command's requests for one reader and shows each, with
// its response, on the reader's websocket.
type runner struct {
	u     *UI
	cl    *client
	from  caller
	ns    string
	value string // what the reader typed, e.g. a label's value
}

// pods is the path of the reader's namespace's pods, with rest appended.
func (r *runner) pods(rest string) string {
	return "/api/v1/namespaces/" + url.PathEscape(r.ns) + "/pods" + rest
}

// request builds one API request and shows it as sent.
func (r *runner) request(method, target, accept, contentType string, body []byte) (*http.Request, error) {
	headers := map[string]string{"Accept": accept, "User-Agent": userAgent}
	if contentType != "" {
		headers["Content-Type"] = contentType
	}
	r.cl.Send(requestMsg{T: "request", Line: method + " " + target + " HTTP/1.1", Headers: headers, Body: string(body)})
	return r.u.request(r.cl.Context(), r.from, method, target, accept, contentType, body)
}

func (r *runner) respond(code int, h http.Header) {
	r.cl.Send(responseMsg{T: "response", Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Code: code,
		Headers: map[string]string{"Content-Type": h.Get("Content-Type"), "Audit-Id": h.Get("Audit-Id")}})
}

// do sends one request and returns its 2xx body; any other answer is shown
// as the Status it is, and ends the command, as it ends kubectl.
func (r *runner) do(method, target, accept, contentType string, body []byte) ([]byte, bool) {
	rec, err := r.u.do(r.request(method, target, accept, contentType, body))
	if err != nil {
		r.unsent(err)
		return nil, false
	}
	r.respond(rec.Code, rec.Header)
	if rec.Code >= 300 {
		var st apiStatus
		_ = json.Unmarshal(rec.Body, &st)
		r.cl.Send(failedMsg{T: "failed", Status: fmt.Sprintf("%d %s", rec.Code, http.StatusText(rec.Code)), Message: st.Message})
	}
	r.body(prettyJSON(rec.Body))
	if rec.Code >= 300 {
		return nil, false
	}
	return rec.Body, true
}

// unsent ends a command whose request got no answer (the reader left, or
// the server is stopping).
func (r *runner) unsent(err error) {
	if r.cl.Context().Err() == nil {
		r.u.Logger.Warn("run it live: a request got no answer", "error", err)
		r.fail("the request got no answer")
	}
}

// body sends a whole response body as the raw answer, in one message:
// a line each would overflow the reader's send queue with a long list.
func (r *runner) body(text string) {
	r.cl.Send(lineMsg{T: "body", Text: text})
}

// stream sends one watch: each line as the raw answer and, when the
// command prints something else (show is not nil), as it prints it.
func (r *runner) stream(target, accept string, show func(line []byte) lineMsg) {
	resp, err := r.u.send(r.request("GET", target, accept, "", nil))
	if err != nil {
		r.unsent(err)
		return
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	r.respond(code, resp.Header)
	// failedShown: the failure's summary leads the answer once, before
	// the Status's first line.
	failedShown := false
	lines(resp.Body, func(line []byte) bool {
		raw := rawLine(line)
		if code != http.StatusOK {
			if code >= 300 && !failedShown {
				var st apiStatus
				_ = json.Unmarshal(line, &st)
				r.cl.Send(failedMsg{T: "failed", Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Message: st.Message})
				failedShown = true
			}
			return r.cl.Send(raw)
		}
		if !r.cl.Send(raw) {
			return false
		}
		return show == nil || r.cl.Send(show(line))
	})
}

// show sends the lines a command prints; false if the reader has gone.
func (r *runner) show(lines []string, err error) bool {
	if err != nil {
		r.fail("reading the response: " + err.Error())
		return false
	}
	for _, l := range lines {
		if !r.cl.Send(lineMsg{T: "line", Text: l}) {
			return false
		}
	}
	return true
}

func (r *runner) fail(message string) { r.cl.Send(endMsg{T: "error", Message: message}) }

// runEvent is the part of a watch event the lesson shows.
type runEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind    string `json:"kind"`
		Code    int32  `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"object"`
}

// rawLine shows one line of a watch as kubectl get --raw prints it
// (shortened), typed by its event for colour.
func rawLine(line []byte) lineMsg {
	var ev runEvent
	_ = json.Unmarshal(line, &ev)
	s := htmlUnescaper.Replace(string(line))
	if len(s) > maxLine {
		s = s[:maxLine] + "…"
	}
	return lineMsg{T: "body", Text: s, Type: ev.Type}
}

// printed is a raw line as the command prints it.
func printed(l lineMsg) lineMsg { l.T = "line"; return l }

// tableEvent shows one event of a watch asked for as Tables, as kubectl get
// --watch --output-watch-events prints it: the event type, then the row.
func tableEvent(line []byte) lineMsg {
	var ev runEvent
	if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
		return printed(rawLine(line))
	}
	if ev.Type == "ERROR" {
		return lineMsg{T: "line", Text: fmt.Sprintf("ERROR %d %s: %s", ev.Object.Code, ev.Object.Reason, ev.Object.Message), Type: ev.Type}
	}
	var obj struct {
		Object json.RawMessage `json:"object"`
	}
	_ = json.Unmarshal(line, &obj)
	rows, err := showTable(obj.Object, ev.Type)
	if err != nil || len(rows) < 2 {
		return printed(rawLine(line))
	}
	return lineMsg{T: "line", Text: strings.Join(rows[1:], "\n"), Type: ev.Type}
}

var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

func prettyJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	// The same JSON, as a reader expects to see it: the page shows it as
	// text, so < > & need no escaping here.
	s := htmlUnescaper.Replace(out.String())
	if len(s) > 16*1024 {
		s = s[:16*1024] + "\n…"
	}
	return s
}

// showTable prints a Table as kubectl get does: the priority-0 columns,
// upper-cased, aligned; with --output-watch-events, event leads each row
// under an EVENT column.
func showTable(b []byte, event string) ([]string, error) {
	var t struct {
		ColumnDefinitions []struct {
			Name     string `json:"name"`
			Priority int    `json:"priority"`
		} `json:"columnDefinitions"`
		Rows []struct {
			Cells []any `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 3, ' ', 0)
	var cols []int
	var head []string
	if event != "" {
		head = append(head, "EVENT")
	}
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, i)
			head = append(head, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range t.Rows {
		var cells []string
		if event != "" {
			cells = append(cells, event)
		}
		for _, i := range cols {
			if i < len(r.Cells) {
				cells = append(cells, fmt.Sprint(r.Cells[i]))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n"), nil
}

// runEtcdGet is the lesson's etcdctl get: a read straight from etcd, past
// the API (and so past RBAC, which etcdReader asks first), shown as etcdctl prints it.
func (u *UI) runEtcdGet(cl *client, reader etcdReader, ns string) {
	key := storage.RootPrefix + "pods/" + ns + "/ssa-demo"
	cl.Send(requestMsg{T: "request", Line: "etcd Range " + key, Headers: map[string]string{
		"Note": "etcdctl get speaks etcd's gRPC API directly: no API server, no RBAC, no admission"}})
	if !reader.mayRead(key) {
		cl.Send(endMsg{T: "error", Message: "you may read only your own namespace's keys"})
		return
	}
	resp, err := u.Etcd.Get(cl.Context(), key)
	if err != nil {
		cl.Send(endMsg{T: "error", Message: "etcd did not answer"})
		return
	}
	cl.Send(responseMsg{T: "response", Status: "200 OK", Code: 200, Headers: map[string]string{
		"Revision": strconv.FormatInt(resp.Header.Revision, 10), "Count": strconv.FormatInt(resp.Count, 10)}})
	for _, kv := range resp.Kvs {
		cl.Send(lineMsg{T: "line", Text: string(kv.Key)})
		for _, l := range strings.Split(escapeBytes(kv.Value), "\n") {
			if !cl.Send(lineMsg{T: "line", Text: l}) {
				return
			}
		}
	}
}

// escapeBytes shows a binary value as text: printable ASCII as is, newlines
// kept, every other byte as \xNN (the k8s\x00 prefix reads as the lesson
// writes it).
func escapeBytes(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c == '\n' || (c >= 0x20 && c < 0x7f):
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "\\x%02x", c)
		}
	}
	return sb.String()
}
