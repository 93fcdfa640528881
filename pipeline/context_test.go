package pipeline_test

import (
	"context"
	"testing"

	"github.com/kubelab/kubelab/pipeline"
)

func TestRequestContext(t *testing.T) {
	if _, _, ok := pipeline.FromContext(context.Background()); ok {
		t.Fatal("a bare context carries a request")
	}
	tr := &pipeline.Trace{ID: "x"}
	ctx := pipeline.WithRequest(context.Background(), tr, pipeline.User{Name: "alice"})
	got, u, ok := pipeline.FromContext(ctx)
	if !ok || got != tr || u.Name != "alice" {
		t.Fatalf("got %v %v %v", got, u, ok)
	}
}
