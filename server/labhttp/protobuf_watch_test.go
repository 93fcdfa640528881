package labhttp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// contentTypes remembers the Content-Type of each watch response a
// client got.
type contentTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil && r.URL.Query().Get("watch") != "" {
		c.mu.Lock()
		c.seen = append(c.seen, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

// The watch lab done with client-go's own choice for built-in kinds, a
// protobuf watch: the labs are told of the events the registry sends,
// whatever their encoding, so the MODIFIED on it passes the step.
func TestWatchLabWithAProtobufWatch(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t, classroomMode)
	alice := student(t, lab, "alice")
	alice.start("watch")
	args := alice.kubectlArgs()
	cfg, err := clientcmd.BuildConfigFromFlags("", args[1])
	if err != nil {
		t.Fatal(err)
	}
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	types := &contentTypes{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { types.next = rt; return types }
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := cs.CoreV1().Pods(alice.name).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	modified := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == "MODIFIED" {
				close(modified)
				for range w.ResultChan() {
				}
				return
			}
		}
	}()
	alice.waitPassed("watch", "watch-pods")
	types.mu.Lock()
	got := append([]string(nil), types.seen...)
	types.mu.Unlock()
	if len(got) != 1 || got[0] != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("the watch was not a protobuf stream: %q", got)
	}
	if _, stderr, err := alice.kubectl("-n", alice.name, "label", "pod", "ssa-demo", "demo-round=protobuf", "--overwrite"); err != nil {
		t.Fatal(err, stderr)
	}
	select {
	case <-modified:
	case <-ctx.Done():
		t.Fatal("client-go saw no MODIFIED")
	}
	if st := alice.waitPassed("watch", "see-modified"); !strings.Contains(st.Evidence, "MODIFIED") {
		t.Errorf("evidence %q", st.Evidence)
	}
}
