package differential

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// scenario runs against one server and returns what a client saw, one
// observation per line, with resourceVersions named by marks.
type scenario struct {
	name string
	run  func(t *testing.T, s server, c *client) []string
}

// The scenarios, in order: some restart the API server and leave it as
// the next one needs it.
var scenarios = []scenario{
	{runningName, running},
	{"more than 100 events within 75 s, then a watch from before them", burst},
	{compactBehindName, compactBehind},
	{"a paused watcher; the API server restarts; the watcher resumes", restart},
	{"100 events, 76 s of quiet, 102 more: a watch from the first", stale},
	{ownCompactorName, ownCompactor},
	{"--watch-cache=false, then etcdctl compact: watch, exact list, continue", noCache},
}

const runningName = "a running server: watch from a marker, initial events, bookmarks"

const compactBehindName = "etcdctl compact behind the server's back, then watch, exact list, NotOlderThan list, continue"

const ownCompactorName = "the server's own compactor every 10 s: watch, exact list, continue from before it"

const sel = "labelSelector=" + "diff%3Dyes"

func cmBody(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"diff":"yes"}}}`, name)
}

// setup makes a namespace of the scenario's own, and its marker M: a
// config map created in it.
func setup(t *testing.T, c *client, m *marks) string {
	t.Helper()
	ns := fmt.Sprintf("diff-%d", time.Now().UnixNano()%1_000_000_000)
	if code, o := c.call(t, "POST", "/api/v1/namespaces", fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)); code != 201 {
		t.Fatalf("namespace: %d %s", code, o.Message)
	}
	// The root CA publisher's config map in it comes first, so that it
	// moves no watch cache during the scenario.
	waitExists(t, c, "/api/v1/namespaces/"+ns+"/configmaps/kube-root-ca.crt")
	m.add("M", create(t, c, ns, "m"))
	return ns
}

func waitExists(t *testing.T, c *client, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := c.call(t, "GET", path, ""); code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func create(t *testing.T, c *client, ns, name string) int64 {
	t.Helper()
	code, o := c.call(t, "POST", "/api/v1/namespaces/"+ns+"/configmaps", cmBody(name))
	if code != 201 {
		t.Fatalf("create %s: %d %s", name, code, o.Message)
	}
	return o.rv(t)
}

func remove(t *testing.T, c *client, ns, name string) {
	t.Helper()
	if code, o := c.call(t, "DELETE", "/api/v1/namespaces/"+ns+"/configmaps/"+name, ""); code != 200 {
		t.Fatalf("delete %s: %d %s", name, code, o.Message)
	}
}

// moveOn writes elsewhere, so that etcd's revision moves past the
// scenario's last write, as kube-apiserver's own lease updates move it.
func moveOn(t *testing.T, c *client, ns string) {
	t.Helper()
	name := fmt.Sprintf("%s-later-%d", ns, time.Now().UnixNano()%1000)
	if code, o := c.call(t, "POST", "/api/v1/namespaces", fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, name)); code != 201 {
		t.Fatalf("namespace: %d %s", code, o.Message)
	}
}

func cms(ns string) string { return "/api/v1/namespaces/" + ns + "/configmaps?" + sel }

func from(ns string, rv int64) string { return fmt.Sprintf("%s&resourceVersion=%d", cms(ns), rv) }

func running(t *testing.T, s server, c *client) []string {
	m := &marks{}
	ns := setup(t, c, m)
	m.add("A", create(t, c, ns, "a"))
	remove(t, c, ns, "a")
	yes := "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
	code, o := c.call(t, "GET", cms(ns)+"&watch=1&timeoutSeconds=1"+yes, "")
	// Short watches from a fresh list's resourceVersion (a consistent read,
	// which brings each cache up to etcd's revision): alone, or with a
	// config map written in another namespace a second in, which the watch
	// does not see but which moves its resource past the watch's start.
	fresh := func() int64 {
		_, list := c.call(t, "GET", cms(ns), "")
		return list.rv(t)
	}
	quiet := func() []event { return c.watch(t, from(ns, fresh())+"&allowWatchBookmarks=true", 4, 0) }
	elsewhere := func() []event {
		rv := fresh()
		go func() {
			time.Sleep(time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := c.do(ctx, "POST", "/api/v1/namespaces/default/configmaps", cmBody(ns+"-elsewhere"))
			if err != nil {
				t.Errorf("a write elsewhere: %v", err)
				return
			}
			resp.Body.Close()
		}()
		return c.watch(t, from(ns, rv)+"&allowWatchBookmarks=true", 4, 0)
	}
	return []string{
		"watch from M: " + m.describeAll(c.watch(t, from(ns, m.revs[0]), 3, 2)),
		"watch from 0: " + m.describeAll(c.watch(t, cms(ns)+"&resourceVersion=0", 3, 1)),
		"sendInitialEvents: " + m.describeAll(c.watch(t, cms(ns)+yes+"&allowWatchBookmarks=true", 3, 2)),
		fmt.Sprintf("sendInitialEvents without allowWatchBookmarks: %d %s", code, o.Message),
		"watch from 0, allowWatchBookmarks, 4 s: " + m.describeAll(c.watch(t, cms(ns)+"&resourceVersion=0&allowWatchBookmarks=true", 4, 0)),
		"watch from a fresh list, allowWatchBookmarks, 4 s: " + m.describeAll(quiet()),
		"watch from a fresh list, allowWatchBookmarks, 4 s, a write elsewhere at 1 s: " + m.describeAll(elsewhere()),
	}
}

func burst(t *testing.T, s server, c *client) []string {
	m := &marks{}
	ns := setup(t, c, m)
	for i := range 150 {
		create(t, c, ns, fmt.Sprintf("b%03d", i))
	}
	events := c.watch(t, from(ns, m.revs[0]), 5, 150)
	errors := 0
	for _, ev := range events {
		if ev.Type != "ADDED" {
			errors++
		}
	}
	return []string{fmt.Sprintf("watch from M after 150 creates: %d events, %d not ADDED", len(events), errors)}
}

// revision is etcd's current revision, as etcdctl reports it.
func revision(t *testing.T, s server) string {
	out := etcdctl(t, s, "endpoint", "status", "-w", "fields")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, `"Revision" : `) {
			return strings.TrimPrefix(line, `"Revision" : `)
		}
	}
	t.Fatalf("no revision in %s", out)
	return ""
}

// listObs is a list's answer: its code, and its message or its
// resourceVersion relative to the marker.
func listObs(t *testing.T, c *client, m *marks, path string) string {
	code, o := c.call(t, "GET", path, "")
	if code != 200 {
		tok := ""
		if o.Metadata.Continue != "" {
			tok = " (with a new continue token)"
		}
		return fmt.Sprintf("%d %s%s", code, o.Message, tok)
	}
	rel := "< M"
	if rv := o.rv(t); rv == m.revs[0] {
		rel = "= M"
	} else if rv > m.revs[0] {
		rel = "> M"
	}
	return fmt.Sprintf("200, %d items, resourceVersion %s", len(o.Items), rel)
}

func compactBehind(t *testing.T, s server, c *client) []string {
	m := &marks{}
	ns := setup(t, c, m)
	create(t, c, ns, "a")
	_, first := c.call(t, "GET", cms(ns)+"&limit=1", "")
	create(t, c, ns, "b")
	moveOn(t, c, ns)
	etcdctl(t, s, "compact", revision(t, s))
	M := m.revs[0]
	return []string{
		"watch from M: " + m.describeAll(c.watch(t, from(ns, M), 3, 1)),
		"exact list at M: " + listObs(t, c, m, fmt.Sprintf("%s&resourceVersion=%d&resourceVersionMatch=Exact", cms(ns), M)),
		"NotOlderThan list from M: " + listObs(t, c, m, fmt.Sprintf("%s&resourceVersion=%d&resourceVersionMatch=NotOlderThan", cms(ns), M)),
		"continue token from before: " + listObs(t, c, m, cms(ns)+"&limit=1&continue="+url.QueryEscape(first.Metadata.Continue)),
	}
}

func restart(t *testing.T, s server, c *client) []string {
	m := &marks{}
	ns := setup(t, c, m)
	m.add("A", create(t, c, ns, "a"))
	seen := c.watch(t, from(ns, m.revs[0]), 3, 1) // the watcher sees a, then pauses
	moveOn(t, c, ns)
	s.Restart(t)
	c = s.Client(t)
	// The list after the restart is not a mark: Y, the restarted cache's
	// list, is before it by however many writes each server made meanwhile.
	_, list := c.call(t, "GET", cms(ns), "")
	return []string{
		"before the restart, watch from M: " + m.describeAll(seen),
		"after it, resume from A: " + m.describeAll(c.watch(t, from(ns, m.revs[1]), 3, 0)),
		"watch from a list after it: " + m.describeAll(c.watch(t, from(ns, list.rv(t)), 2, 0)),
	}
}

// stale lets a fresh cache's events age past 75 s, then writes 102 more:
// the history, full, drops its oldest events rather than grow, and a watch
// from before them gets 410 with Y = the oldest event kept, minus one.
func stale(t *testing.T, s server, c *client) []string {
	s.Restart(t)
	c = s.Client(t)
	m := &marks{}
	ns := setup(t, c, m)
	for i := range 99 {
		m.add(fmt.Sprintf("W%d", i+1), create(t, c, ns, fmt.Sprintf("w%03d", i)))
	}
	time.Sleep(76 * time.Second)
	for i := range 102 {
		m.add(fmt.Sprintf("X%d", i+1), create(t, c, ns, fmt.Sprintf("x%03d", i)))
	}
	watches := []string{
		"watch from M: " + m.describeAll(c.watch(t, from(ns, m.revs[0]), 3, 1)),
		"watch from W5: " + m.describeAll(c.watch(t, from(ns, m.revs[5]), 3, 1)),
	}
	// The full history keeps no snapshot below its oldest event: an exact
	// list from before it reads etcd, compacted behind the server's back.
	etcdctl(t, s, "compact", revision(t, s))
	exact := func(rv int64) string {
		return listObs(t, c, m, fmt.Sprintf("%s&resourceVersion=%d&resourceVersionMatch=Exact", cms(ns), rv))
	}
	return append(watches,
		"after etcdctl compact, exact list at M: "+exact(m.revs[0]),
		"after etcdctl compact, exact list at W5: "+exact(m.revs[5]),
	)
}

// ownCompactor runs the servers' own compactors every 10 s. Each round
// compacts at the revision seen one round earlier and writes it to
// compact_rev_key, which tells the watch caches (kube's within 15 s): the
// exact list and the continue token from before it go to etcd, and get
// its 410; the watch cache's window does not move.
func ownCompactor(t *testing.T, s server, c *client) []string {
	s.Restart(t, "--etcd-compaction-interval=10s")
	defer s.Restart(t)
	c = s.Client(t)
	m := &marks{}
	ns := setup(t, c, m)
	create(t, c, ns, "a")
	_, first := c.call(t, "GET", cms(ns)+"&limit=1", "")
	create(t, c, ns, "b")
	moveOn(t, c, ns)
	time.Sleep(45 * time.Second)
	M := m.revs[0]
	return []string{
		"watch from M: " + m.describeAll(c.watch(t, from(ns, M), 3, 1)),
		"exact list at M: " + listObs(t, c, m, fmt.Sprintf("%s&resourceVersion=%d&resourceVersionMatch=Exact", cms(ns), M)),
		"continue token from before: " + listObs(t, c, m, cms(ns)+"&limit=1&continue="+url.QueryEscape(first.Metadata.Continue)),
	}
}

func noCache(t *testing.T, s server, c *client) []string {
	s.Restart(t, "--watch-cache=false")
	defer s.Restart(t)
	c = s.Client(t)
	m := &marks{}
	ns := setup(t, c, m)
	create(t, c, ns, "a")
	_, first := c.call(t, "GET", cms(ns)+"&limit=1", "")
	create(t, c, ns, "b")
	moveOn(t, c, ns)
	etcdctl(t, s, "compact", revision(t, s))
	M := m.revs[0]
	return []string{
		"watch from M: " + m.describeAll(c.watch(t, from(ns, M), 3, 1)),
		"exact list at M: " + listObs(t, c, m, fmt.Sprintf("%s&resourceVersion=%d&resourceVersionMatch=Exact", cms(ns), M)),
		"continue token from before: " + listObs(t, c, m, cms(ns)+"&limit=1&continue="+url.QueryEscape(first.Metadata.Continue)),
		"watch from 0: " + m.describeAll(c.watch(t, cms(ns)+"&resourceVersion=0", 3, 2)),
	}
}
