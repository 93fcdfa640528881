package differential

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// object is the part of an object or Status a scenario compares.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		ResourceVersion string            `json:"resourceVersion"`
		Continue        string            `json:"continue"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Items   []object `json:"items"`
	Message string   `json:"message"`
	Reason  string   `json:"reason"`
	Code    int      `json:"code"`
}

type event struct {
	Type   string `json:"type"`
	Object object `json:"object"`
}

func (o object) rv(t *testing.T) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q of %s %s", o.Metadata.ResourceVersion, o.Kind, o.Metadata.Name)
	}
	return rv
}

// call makes one request and decodes its answer; it returns the status code.
func (c *client) call(t *testing.T, method, path, body string) (int, object) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var o object
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, o
}

// watch reads a watch's events until it ends (timeoutSeconds) or n events
// came (n 0: no limit).
func (c *client) watch(t *testing.T, path string, seconds, n int) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+20)*time.Second)
	defer cancel()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	resp, err := c.do(ctx, "GET", fmt.Sprintf("%s%swatch=1&timeoutSeconds=%d", path, sep, seconds), "")
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(resp.Body)
		return []event{{Type: fmt.Sprintf("HTTP %d", resp.StatusCode), Object: object{Message: string(data)}}}
	}
	var events []event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch %s: %v: %s", path, err, sc.Text())
		}
		events = append(events, ev)
		if n > 0 && len(events) == n {
			break
		}
	}
	return events
}

// marks names resourceVersions a scenario knows, so that an observation
// says "M+2" or "W3" rather than a number that differs between servers.
type marks struct {
	names []string
	revs  []int64
}

func (m *marks) add(name string, rv int64) {
	m.names, m.revs = append(m.names, name), append(m.revs, rv)
}

// name is rv as a mark: "W2-1" when it is just before one (kube's Y is
// the oldest event kept minus one), else as exact names it. The two
// servers' etcds move on with different writes of their own (such as
// leases) between a scenario's marks, so only these relations compare.
func (m *marks) name(rv int64) string {
	for i, r := range m.revs {
		if r == rv+1 {
			return m.names[i] + "-1"
		}
	}
	return m.exact(rv)
}

// exact is rv as the mark it is, else "after" the nearest mark below it.
func (m *marks) exact(rv int64) string {
	best, bestRev := "", int64(-1)
	for i, r := range m.revs {
		if r <= rv && r > bestRev {
			best, bestRev = m.names[i], r
		}
	}
	switch {
	case best == "":
		return "before every mark"
	case rv == bestRev:
		return best
	}
	return "after " + best
}

// describe is an event as a scenario compares it: type, and for errors the
// code and message with resourceVersions named by marks.
func (m *marks) describe(ev event) string {
	switch ev.Type {
	case "ERROR":
		return fmt.Sprintf("ERROR %d %s", ev.Object.Code, m.message(ev.Object.Message))
	case "BOOKMARK":
		if ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true" {
			return "BOOKMARK initial-events-end"
		}
		return "BOOKMARK"
	}
	return ev.Type + " " + ev.Object.Metadata.Name
}

// message names the numbers of "too old resource version: X (Y)".
func (m *marks) message(msg string) string {
	var x, y int64
	if n, _ := fmt.Sscanf(msg, "too old resource version: %d (%d)", &x, &y); n == 2 {
		return fmt.Sprintf("too old resource version: %s (%s)", m.exact(x), m.name(y))
	}
	return msg
}

func (m *marks) describeAll(events []event) string {
	var descs []string
	var counts []int
	for _, ev := range events {
		d := m.describe(ev)
		// Runs of the same event are counted, not listed; a run of plain
		// bookmarks is one, since kube's one-second bookmark timer sends
		// the one before a deadline once or twice, as its phase falls.
		if n := len(descs); n > 0 && descs[n-1] == d {
			if d != "BOOKMARK" {
				counts[n-1]++
			}
			continue
		}
		descs, counts = append(descs, d), append(counts, 1)
	}
	out := make([]string, len(descs))
	for i, d := range descs {
		out[i] = d
		if counts[i] > 1 {
			out[i] = fmt.Sprintf("%s ×%d", d, counts[i])
		}
	}
	if len(out) == 0 {
		return "(no events)"
	}
	return strings.Join(out, ", ")
}
