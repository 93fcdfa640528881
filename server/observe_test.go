package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
)

// syncBuffer is a log sink the server writes from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func metric(t *testing.T, body, pattern string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + pattern + ` ([0-9.e+-]+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no sample matches %s", pattern)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestMetricsAndRequestLog(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	lab := kubelabtest.Start(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	cs := lab.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Pods("internals-demo").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps("internals-demo").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := lab.EtcdCompactor().CompactNow(ctx); err != nil {
		t.Fatal(err)
	}

	// One quiz attempt, through the JSON API as a student's client would:
	// open the quiz to be issued an attempt, answer in its option ids.
	view, err := http.Get(lab.URL() + quizhttp.QuizzesPath + "/" + quiz.WatchQuizID)
	if err != nil {
		t.Fatal(err)
	}
	var v quiz.View
	err = json.NewDecoder(view.Body).Decode(&v)
	view.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var answers []quiz.Answer
	for _, question := range v.Questions {
		answers = append(answers, quiz.Answer{Question: question.ID, Choice: question.Options[0].ID})
	}
	body, _ := json.Marshal(quizhttp.AttemptRequest{Attempt: v.Attempt, Answers: answers})
	submit, err := http.Post(lab.URL()+quizhttp.QuizzesPath+"/"+quiz.WatchQuizID+"/attempts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	submit.Body.Close()
	if submit.StatusCode != http.StatusCreated {
		t.Fatalf("quiz attempt: %d", submit.StatusCode)
	}

	// A live view open in a browser.
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(lab.URL(), "http")+"/ui/ws/trace", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {lab.URL()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()

	// The websocket registers with the UI just after its handshake: scrape
	// until it shows (or give up and let the checks below say so).
	var resp *http.Response
	var metrics string
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err = http.Get(lab.URL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
		if strings.Contains(metrics, "\nkubelab_websocket_clients 1\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, metrics)
	}
	if v := metric(t, metrics, `apiserver_request_total\{code="200",group="",resource="pods",subresource="",verb="list"\}`); v < 1 {
		t.Errorf("pod lists counted: %v", v)
	}
	if v := metric(t, metrics, `apiserver_request_duration_seconds_count\{group="",resource="pods",subresource="",verb="list"\}`); v < 1 {
		t.Errorf("pod list latencies: %v", v)
	}
	if v := metric(t, metrics, `etcd_request_duration_seconds_count\{operation="txn"\}`); v < 1 {
		t.Errorf("etcd transactions timed: %v", v)
	}
	if v := metric(t, metrics, `kubelab_watch_cache_watchers`); v < 1 {
		t.Errorf("open watchers: %v, with a watch open", v)
	}
	if v := metric(t, metrics, `kubelab_websocket_clients`); v != 1 {
		t.Errorf("websocket clients: %v, with one live view open", v)
	}
	if v := metric(t, metrics, `kubelab_quiz_submissions_total`); v != 1 {
		t.Errorf("quiz submissions: %v", v)
	}
	if v := metric(t, metrics, `kubelab_etcd_compactions_total`); v != 1 {
		t.Errorf("compactions: %v", v)
	}

	// One log line per request, carrying the ID the client got.
	resp, err = http.Get(lab.URL() + "/api/v1/namespaces/internals-demo/pods/ssa-demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Audit-Id")
	// The line is written once the response has gone: look for a while.
	found := false
	for deadline := time.Now().Add(5 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sc := bufio.NewScanner(bytes.NewBufferString(logs.String()))
		for sc.Scan() {
			var line struct {
				Msg, Trace, Path, Verb string
				Code                   int
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "request" && line.Trace == id {
				found = line.Code == 200 && line.Verb == "get" && line.Path == "/api/v1/namespaces/internals-demo/pods/ssa-demo"
			}
		}
	}
	if id == "" || !found {
		t.Fatalf("no request log line for trace %q in:\n%s", id, logs.String())
	}
}
