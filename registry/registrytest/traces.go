package registrytest

import (
	"sync"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
)

// Traces keeps what a registry's pipeline publishes: who wrote what, and
// how it ended.
type Traces struct {
	mu  sync.Mutex
	all []pipeline.Trace
}

// Traced gives reg a pipeline that only traces, and returns what it
// publishes. As in the server, a pipeline makes every call name its user:
// a controller that forgot its identity is refused, not let through.
func Traced(reg *registry.Registry) *Traces {
	tr := &Traces{}
	reg.SetPipeline(&pipeline.Pipeline{Traces: tr})
	return tr
}

// Publish keeps a trace; the pipeline calls it once a call has returned.
func (t *Traces) Publish(tr pipeline.Trace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.all = append(t.all, tr)
}

// All is every trace kept so far, oldest first.
func (t *Traces) All() []pipeline.Trace {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]pipeline.Trace(nil), t.all...)
}
