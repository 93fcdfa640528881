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

// BenchmarkCreatePod creates pods through the whole API over HTTP with 16
// concurrent writers, to profile the server's create path:
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
