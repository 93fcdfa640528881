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

// tableAccept is what kubectl get sends, as the lesson's -v=9 trace shows.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// maxLine bounds one streamed line shown in the browser.
const maxLine = 600

// liveCommand is the HTTP request a lesson command makes, and how its
// answer is shown.
type liveCommand struct {
	method, path, accept, contentType string
	// body builds the request body from the reader's input.
	body func(value string) ([]byte, error)
	// stream: the answer is a watch, shown event by event.
	stream bool
	// events shows a watch's events as kubectl --output-watch-events does,
	// instead of the raw lines of `kubectl get --raw`.
	events bool
	// show turns a whole 2xx body into the lines the lesson shows.
	show func(body []byte) ([]string, error)
}

// liveCommands are the lesson's runnable commands, by the id its content
// gives them (web.LiveCommands); %s is the reader's namespace.
var liveCommands = map[string]liveCommand{
	"list-table": {method: "GET", path: "/api/v1/namespaces/%s/pods?limit=500", accept: tableAccept, show: showTable},
	"list-rv": {method: "GET", path: "/api/v1/namespaces/%s/pods", accept: "application/json", show: func(b []byte) ([]string, error) {
		var l struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		err := json.Unmarshal(b, &l)
		return []string{l.Metadata.ResourceVersion}, err
	}},
	"watch-pods": {method: "GET", path: "/api/v1/namespaces/%s/pods?watch=1", accept: "application/json", stream: true, events: true},
	"label-pod": {method: "PATCH", path: "/api/v1/namespaces/%s/pods/ssa-demo", accept: "application/json", contentType: "application/merge-patch+json",
		body: func(v string) ([]byte, error) {
			return json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"demo-round": v}}})
		},
		show: func([]byte) ([]string, error) { return []string{"pod/ssa-demo labeled"}, nil }},
	"watch-bookmarks": {method: "GET", path: "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=&timeoutSeconds=6&allowWatchBookmarks=true", accept: "application/json", stream: true},
	"watch-gone":      {method: "GET", path: "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=1&timeoutSeconds=6", accept: "application/json", stream: true},
	"apis": {method: "GET", path: "/apis", accept: "application/json", show: func(b []byte) ([]string, error) {
		var l struct {
			Groups []struct{ Name string } `json:"groups"`
		}
		err := json.Unmarshal(b, &l)
		var out []string
		for _, g := range l.Groups {
			out = append(out, g.Name)
		}
		return out, err
	}},
	"openapi": {method: "GET", path: "/openapi/v3", accept: "application/json", show: func(b []byte) ([]string, error) {
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
	}},
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

type lineMsg struct {
	T    string `json:"t"`
	Text string `json:"text"`
	Type string `json:"type,omitempty"`
}

type endMsg struct {
	T       string `json:"t"`
	Message string `json:"message,omitempty"`
}

// runStream runs one lesson command live: the request it makes, through
// the API's router with the browser's credentials, in the reader's
// namespace, and the real response, streamed until it ends or the reader
// stops it.
func (u *UI) runStream(c echo.Context) error {
	cmd, ok := liveCommands[c.QueryParam("cmd")]
	value := c.QueryParam("value")
	ns := namespace(c)
	from := callerOf(c.Request())
	cl, accepted := u.accept(c, smallWriteBuffer)
	if !accepted {
		return nil
	}
	etcdGet := c.QueryParam("cmd") == "etcd-get"
	var reader etcdReader
	if etcdGet {
		reader = u.etcdReaderFor(c)
	}
	go func() {
		switch {
		case etcdGet:
			u.runEtcdGet(cl, reader, ns)
		case !ok:
			cl.send(endMsg{T: "error", Message: "no such command"})
		default:
			u.runCommand(cl, from, cmd, ns, value)
		}
		cl.send(endMsg{T: "end"})
		cl.finish()
	}()
	u.serve(cl, nil)
	return nil
}

func (u *UI) runCommand(cl *client, from caller, cmd liveCommand, ns, value string) {
	target := cmd.path
	if strings.Contains(target, "%s") {
		target = fmt.Sprintf(target, url.PathEscape(ns))
	}
	var body []byte
	if cmd.body != nil {
		var err error
		if body, err = cmd.body(value); err != nil {
			cl.send(endMsg{T: "error", Message: err.Error()})
			return
		}
	}
	r := apiRequest(cl.ctx, from, cmd.method, target, cmd.contentType, body)
	r.Header.Set("Accept", cmd.accept)
	headers := map[string]string{"Accept": cmd.accept, "User-Agent": r.Header.Get("User-Agent")}
	if cmd.contentType != "" {
		headers["Content-Type"] = cmd.contentType
	}
	cl.send(requestMsg{T: "request", Line: cmd.method + " " + target + " HTTP/1.1", Headers: headers, Body: string(body)})

	respond := func(code int, h http.Header) {
		cl.send(responseMsg{T: "response", Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Code: code,
			Headers: map[string]string{"Content-Type": h.Get("Content-Type"), "Audit-Id": h.Get("Audit-Id")}})
	}
	if cmd.stream {
		code := 0
		w := newLineWriter(func(c int, h http.Header) { code = c; respond(c, h) }, func(line []byte) bool {
			return cl.send(watchLine(line, cmd.events && code == http.StatusOK))
		})
		u.router.ServeHTTP(w, r)
		w.rest()
		return
	}
	rec := u.do(r)
	respond(rec.Code, rec.Header())
	if rec.Code >= 300 || cmd.show == nil {
		for _, l := range strings.Split(prettyJSON(rec.Body.Bytes()), "\n") {
			cl.send(lineMsg{T: "line", Text: l})
		}
		return
	}
	lines, err := cmd.show(rec.Body.Bytes())
	if err != nil {
		cl.send(endMsg{T: "error", Message: "reading the response: " + err.Error()})
		return
	}
	for _, l := range lines {
		if !cl.send(lineMsg{T: "line", Text: l}) {
			return
		}
	}
}

// watchLine shows one line of a watch: as kubectl --output-watch-events
// prints it, or raw (shortened) as kubectl get --raw does.
func watchLine(line []byte, events bool) lineMsg {
	var ev wireEvent
	_ = json.Unmarshal(line, &ev)
	if events && ev.Type != "" {
		text := fmt.Sprintf("%s %s rv=%s name=%s", ev.Type, ev.Object.Kind, ev.Object.Metadata.ResourceVersion, ev.Object.Metadata.Name)
		if ev.Type == "ERROR" {
			text = fmt.Sprintf("ERROR %d %s: %s", ev.Object.Code, ev.Object.Reason, ev.Object.Message)
		}
		return lineMsg{T: "line", Text: text, Type: ev.Type}
	}
	s := htmlUnescaper.Replace(string(line))
	if len(s) > maxLine {
		s = s[:maxLine] + "…"
	}
	return lineMsg{T: "line", Text: s, Type: ev.Type}
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
// upper-cased, aligned.
func showTable(b []byte) ([]string, error) {
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
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, i)
			head = append(head, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range t.Rows {
		var cells []string
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
	cl.send(requestMsg{T: "request", Line: "etcd Range " + key, Headers: map[string]string{
		"Note": "etcdctl get speaks etcd's gRPC API directly: no API server, no RBAC, no admission"}})
	if !reader.mayRead(key) {
		cl.send(endMsg{T: "error", Message: "you may read only your own namespace's keys"})
		return
	}
	resp, err := u.Etcd.Get(cl.ctx, key)
	if err != nil {
		cl.send(endMsg{T: "error", Message: "etcd did not answer"})
		return
	}
	cl.send(responseMsg{T: "response", Status: "200 OK", Code: 200, Headers: map[string]string{
		"Revision": strconv.FormatInt(resp.Header.Revision, 10), "Count": strconv.FormatInt(resp.Count, 10)}})
	for _, kv := range resp.Kvs {
		cl.send(lineMsg{T: "line", Text: string(kv.Key)})
		for _, l := range strings.Split(escapeBytes(kv.Value), "\n") {
			if !cl.send(lineMsg{T: "line", Text: l}) {
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
