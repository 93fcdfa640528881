package rbac_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/internal/storetest"
)

const students = 500

// classroom is a class of 500 students, each with a namespace and an
// `edit` RoleBinding in it, over a real etcd, plus the default policy.
func classroom(b *testing.B) (*cluster, []*pipeline.Attributes) {
	c := newCluster(b, func(c *cluster) {
		for i := range students {
			storetest.Create(b, c.roleBindings, studentBinding(fmt.Sprintf("student-%03d", i)))
		}
	})
	// A student's own request, and one into a neighbour's namespace (the
	// denial walks every binding that could apply).
	var reqs []*pipeline.Attributes
	for i := range students {
		s := fmt.Sprintf("student-%03d", i)
		reqs = append(reqs,
			res(student(s), "create", "", "pods", "", s, ""),
			res(student(s), "list", "", "pods", "", fmt.Sprintf("student-%03d", (i+1)%students), ""))
	}
	if ok, _ := c.authz.Authorize(reqs[0]); !ok {
		b.Fatal("a student cannot create pods in their namespace")
	}
	return c, reqs
}

// BenchmarkAuthorize500Students measures one RBAC decision with 500
// students' bindings in memory, and reports its p50 and p99 (ns) over a
// shuffled mix of allowed and denied requests.
func BenchmarkAuthorize500Students(b *testing.B) {
	c, reqs := classroom(b)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		c.authz.Authorize(reqs[i%len(reqs)])
		i++
	}
	b.StopTimer()
	const samples = 100000
	lat := make([]time.Duration, samples)
	for j := range samples {
		r := reqs[j%len(reqs)]
		start := time.Now()
		c.authz.Authorize(r)
		lat[j] = time.Since(start)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[samples/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[samples*99/100].Nanoseconds()), "p99-ns")
}
