package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/server"
)

// stalledPost sends a create's headers and the start of its body over a
// raw connection, so the server starts serving it (and holds its in-flight
// slot) while the rest of the body waits for finish.
type stalledPost struct {
	conn net.Conn
	rest string
}

func startStalledPost(t *testing.T, baseURL, path, body string) *stalledPost {
	t.Helper()
	u, _ := url.Parse(baseURL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, u.Host, len(body), body[:10])
	return &stalledPost{conn: conn, rest: body[10:]}
}

// answeredWithin reports whether the server answers the stalled request
// within d (refuses it, when another request held the slot first).
func (p *stalledPost) answeredWithin(d time.Duration) bool {
	p.conn.SetReadDeadline(time.Now().Add(d))
	defer p.conn.SetReadDeadline(time.Time{})
	n, _ := p.conn.Read(make([]byte, 1))
	return n > 0
}

// finish sends the rest of the body and returns the response's code.
func (p *stalledPost) finish(t *testing.T) int {
	t.Helper()
	if _, err := io.WriteString(p.conn, p.rest); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(p.conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}`

func TestOverloadIsRefusedAtOnceWith429(t *testing.T) {
	// Not parallel: it measures how long requests take.
	lab := kubelabtest.Start(t, func(c *server.Config) { c.MaxMutatingRequestsInflight = 1 })
	const path = "/api/v1/namespaces/internals-demo/configmaps"
	// hold starts a create that stalls mid-body and, sending nothing else
	// meanwhile, gives the server time to admit it into the only slot.
	hold := func() *stalledPost {
		p := startStalledPost(t, lab.URL(), path, configMap)
		p.answeredWithin(500 * time.Millisecond)
		return p
	}
	stalled := hold()
	deadline := time.Now().Add(10 * time.Second)
	for {
		start := time.Now()
		resp, err := http.Post(lab.URL()+path, "application/json", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"second-"}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		elapsed := time.Since(start)
		if resp.StatusCode == http.StatusTooManyRequests {
			// kube-apiserver 1.37's answer: plain text, not a Status.
			if string(body) != "Too many requests, please try again later.\n" || resp.Header.Get("Retry-After") != "1" ||
				resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Fatalf("429: %q, Retry-After %q, Content-Type %q", body, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
			}
			// A refusal that waited for the held slot would wait for ever;
			// 5 s is wide of a loaded machine's round trip.
			if elapsed > 5*time.Second {
				t.Fatalf("the refusal took %v: it must not wait for a slot", elapsed)
			}
			break
		}
		if resp.StatusCode != http.StatusCreated || time.Now().After(deadline) {
			t.Fatalf("never refused while the only mutation slot was held: %d %s", resp.StatusCode, body)
		}
		if stalled.answeredWithin(10 * time.Millisecond) {
			// This create took the slot first and the stalled one was
			// refused (or the server was slower than hold's wait): stall
			// another, alone.
			stalled = hold()
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Reads have their own slots and still pass.
	if resp, err := http.Get(lab.URL() + path); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a read while mutations are full: %v %v", resp.StatusCode, err)
	}
	// system:masters always get an answer, as in kube-apiserver, where the
	// cap applies after impersonation: local mode's anonymous
	// cluster-admin acting as a member creates past it.
	cfg, err := clientcmd.BuildConfigFromFlags("", lab.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "root", Groups: []string{"system:masters"}}
	masters := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("internals-demo")
	if _, err := masters.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "masters"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create by system:masters while mutations are full: %v", err)
	}
	if code := stalled.finish(t); code != http.StatusCreated {
		t.Fatalf("the stalled create finished with %d", code)
	}
}

func TestRequestTimeoutIs504AndWritesNothing(t *testing.T) {
	// Not parallel: it measures how long requests take.
	lab := kubelabtest.Start(t, func(c *server.Config) { c.RequestTimeout = 300 * time.Millisecond })
	ctx := context.Background()
	before, _ := lab.EtcdClient().Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	stalled := startStalledPost(t, lab.URL(), "/api/v1/namespaces/internals-demo/configmaps", configMap)
	time.Sleep(3 * time.Second) // well past the request's deadline, on a loaded machine too
	if code := stalled.finish(t); code != http.StatusGatewayTimeout {
		t.Fatalf("a create that outlived its deadline: %d", code)
	}
	after, _ := lab.EtcdClient().Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if after.Header.Revision != before.Header.Revision {
		t.Fatal("a timed-out create was written")
	}
	// A watch is long-running: no timeout but its own. (Its timer starts
	// before the answer's headers reach the client, so the clock starts
	// before the request.)
	start := time.Now()
	w, err := http.Get(lab.URL() + "/api/v1/namespaces/internals-demo/configmaps?watch=1&timeoutSeconds=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, w.Body)
	w.Body.Close()
	if w.StatusCode != 200 || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("watch: %d after %v", w.StatusCode, time.Since(start))
	}
}
