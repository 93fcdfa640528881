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
	if _, ok := pipeline.AuthenticatedFromContext(context.Background()); ok {
		t.Fatal("a bare context carries an authenticated user")
	}
	tr := &pipeline.Trace{ID: "x"}
	ctx := pipeline.WithRequest(context.Background(), tr, pipeline.User{Name: "alice"}, pipeline.User{Name: "system:serviceaccount:alice:default"})
	got, u, ok := pipeline.FromContext(ctx)
	if !ok || got != tr || u.Name != "system:serviceaccount:alice:default" {
		t.Fatalf("got %v %v %v", got, u, ok)
	}
	if real, ok := pipeline.AuthenticatedFromContext(ctx); !ok || real.Name != "alice" {
		t.Fatalf("authenticated %v %v, want alice", real, ok)
	}
}
