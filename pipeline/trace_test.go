package pipeline_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/pipeline"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func TestNewTraceIDIsAUniqueUUIDv4(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := pipeline.NewTraceID()
		if !re.MatchString(id) {
			t.Fatalf("%q is not a v4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q generated twice", id)
		}
		seen[id] = true
	}
}

func TestTraceRunRecordsEachOutcome(t *testing.T) {
	tr := pipeline.NewTrace(httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/a/pods", nil))
	_ = tr.Run(pipeline.StageValidation, "", func() error { return nil })
	mark := tr.Mark()
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil)
	if err := tr.Run(pipeline.StageValidation, "", func() error { return invalid }); err != invalid {
		t.Fatalf("Run changed the error: %v", err)
	}
	_ = tr.Run(pipeline.StageStorage, "etcd", func() error { return errors.New("etcd down") })
	var got []pipeline.Decision
	for _, r := range tr.Records {
		got = append(got, r.Decision)
	}
	if want := []pipeline.Decision{pipeline.Allow, pipeline.Deny, pipeline.Error}; !slices.Equal(got, want) {
		t.Fatalf("decisions %v, want %v", got, want)
	}
	if tr.Records[1].Reason != invalid.Error() || tr.Records[1].Duration <= 0 {
		t.Fatalf("record %+v lacks the reason or a duration", tr.Records[1])
	}
	tr.Rewind(mark)
	if len(tr.Records) != 1 {
		t.Fatalf("Rewind kept %d records, want 1", len(tr.Records))
	}
}

// stub stages: the pipeline's own logic is what is under test here.
type stubAuthn struct {
	u   pipeline.User
	err error
}

func (s stubAuthn) AuthenticateRequest(*http.Request) (pipeline.User, bool, error) {
	return s.u, s.err == nil, s.err
}

type stubAuthz struct{ allow bool }

func (s stubAuthz) Authorize(*pipeline.Attributes) (bool, string) {
	if s.allow {
		return true, `RBAC: allowed by ClusterRoleBinding "x"`
	}
	return false, ""
}

type collect struct{ traces []pipeline.Trace }

func (c *collect) Publish(t pipeline.Trace) { c.traces = append(c.traces, t) }

func TestPipelineStagesRecordAndMapErrors(t *testing.T) {
	alice := pipeline.User{Name: "alice", Groups: []string{pipeline.AllAuthenticated}}
	attrs := &pipeline.Attributes{User: alice, Verb: "list", IsResourceRequest: true, Resource: "pods", Namespace: "bob"}
	t.Run("OK", func(t *testing.T) {
		bus := &collect{}
		p := &pipeline.Pipeline{Authn: stubAuthn{u: alice}, Authz: stubAuthz{allow: true}, Traces: bus}
		req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/bob/pods", nil)
		tr := pipeline.NewTrace(req)
		u, err := p.Authenticate(tr, req)
		if err != nil || u.Name != "alice" {
			t.Fatalf("Authenticate = %v, %v", u, err)
		}
		tr.Describe(attrs)
		if err := p.Authorize(tr, attrs); err != nil {
			t.Fatal(err)
		}
		if err := p.Admit(context.Background(), tr, attrs); err != nil {
			t.Fatal(err)
		}
		p.Finish(tr, http.StatusOK)
		if len(bus.traces) != 1 || len(bus.traces[0].Records) != 2 || bus.traces[0].Code != 200 || bus.traces[0].User != "alice" {
			t.Fatalf("published %+v", bus.traces)
		}
	})
	for _, tc := range []struct {
		name string
		err  error
		want pipeline.Decision
	}{
		{"ErrUnauthorized/unknown token", pipeline.Unauthorized(), pipeline.Deny},
		{"ErrUnauthorized/store down", errors.New("etcd unavailable"), pipeline.Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pipeline.Pipeline{Authn: stubAuthn{err: tc.err}}
			req := httptest.NewRequest(http.MethodGet, "/api", nil)
			tr := pipeline.NewTrace(req)
			_, err := p.Authenticate(tr, req)
			if !apierrors.IsUnauthorized(err) || err.Error() != "Unauthorized" {
				t.Fatalf("client got %v, want kube's 401", err)
			}
			if r := tr.Records[0]; r.Decision != tc.want || r.Stage != pipeline.StageAuthentication {
				t.Fatalf("record %+v", r)
			}
		})
	}
	t.Run("ErrForbidden", func(t *testing.T) {
		p := &pipeline.Pipeline{Authz: stubAuthz{}}
		tr := &pipeline.Trace{}
		err := p.Authorize(tr, attrs)
		want := `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "bob"`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("got %v", err)
		}
		if r := tr.Records[0]; r.Decision != pipeline.Deny || r.Reason != want || r.Plugin != "RBAC" {
			t.Fatalf("record %+v", r)
		}
	})
	t.Run("OK/no stages", func(t *testing.T) {
		p := &pipeline.Pipeline{}
		u, err := p.Authenticate(&pipeline.Trace{}, httptest.NewRequest(http.MethodGet, "/api", nil))
		if err != nil || !u.IsAnonymous() || !u.InGroup(pipeline.AllUnauthenticated) {
			t.Fatalf("got %+v, %v", u, err)
		}
		if err := p.Authorize(&pipeline.Trace{}, attrs); err != nil {
			t.Fatal(err)
		}
	})
}
