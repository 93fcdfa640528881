package kubeapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// BenchmarkCreatePod creates pods through the whole server over HTTP with 16
// concurrent writers (front door, RBAC, admission, registry, etcd), to
// profile the server's create path, as docs/PERFORMANCE.md measures it:
// go test -bench CreatePod -cpuprofile cpu.out ./server/kubeapi/
func BenchmarkCreatePod(b *testing.B) {
	lab := kubelabtest.Start(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var seq atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for seq.Add(1) <= int64(b.N) {
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b-%d","labels":{"app":"bench"}},"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}`, seq.Load())
				resp, err := client.Post(lab.URL()+"/api/v1/namespaces/internals-demo/pods", "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}

// BenchmarkUpdatePod changes a label of existing pods through the whole
// server over HTTP with 16 concurrent writers (a merge patch, as kubectl
// label sends): the update path, from the read of the current object to
// the conditional write.
func BenchmarkUpdatePod(b *testing.B) {
	lab := kubelabtest.Start(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	const pods = 64
	for i := range pods {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u-%d"},"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}`, i)
		resp, err := client.Post(lab.URL()+"/api/v1/namespaces/internals-demo/pods", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("creating pod u-%d: status %d", i, resp.StatusCode)
		}
	}
	var seq atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for n := seq.Add(1); n <= int64(b.N); n = seq.Add(1) {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"round":"r%d"}}}`, n)
				req, _ := http.NewRequest(http.MethodPatch, fmt.Sprintf("%s/api/v1/namespaces/internals-demo/pods/u-%d", lab.URL(), n%pods), strings.NewReader(patch))
				req.Header.Set("Content-Type", "application/merge-patch+json")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "updates/s")
}
