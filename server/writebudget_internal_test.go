package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/internal/webclient"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
)

// A budget lets the burst go at once, then holds its user to the rate:
// a write that overdraws it is paid, and the next waits until the debt
// is, to the second. Others' budgets are their own.
func TestWriteBudgetHoldsAWriterToItsRate(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newWriteBudgets(1000, 5000, func() int { return 1 })
	w.now = func() time.Time { return now }

	for range 4 {
		if d := w.wait("alice"); d != 0 {
			t.Fatalf("within the burst, alice waits %s", d)
		}
		w.pay("alice", 1500)
	}
	// 6,000 of 5,000 paid: 1,000 bytes of debt at 1,000 a second.
	if d := w.wait("alice"); d != time.Second {
		t.Fatalf("1,000 bytes in debt at 1,000/s: wait %s, want 1s", d)
	}
	if d := w.wait("bob"); d != 0 {
		t.Fatalf("bob waits %s for alice's writes", d)
	}
	now = now.Add(time.Second)
	if d := w.wait("alice"); d != 0 {
		t.Fatalf("once the debt is paid, alice waits %s", d)
	}
	// A budget that has filled again is forgotten when another pays, at
	// the next sweep.
	now = now.Add(10 * time.Second)
	w.pay("bob", 1)
	if _, kept := w.buckets["alice"]; !kept {
		t.Fatal("alice's full budget was forgotten before the sweep was due")
	}
	now = now.Add(sweepEvery)
	w.pay("bob", 1)
	if _, kept := w.buckets["alice"]; kept {
		t.Fatal("alice's full budget is still kept after a sweep")
	}
}

// Behind a proxy a student's writes reach every replica, so each keeps
// its share of the budget: the class's budget, not that many times it.
// As replicas come and go, the shares follow.
func TestWriteBudgetIsSharedByTheReplicas(t *testing.T) {
	now := time.Unix(1000, 0)
	replicas := 3
	w := newWriteBudgets(3000, 6000, func() int { return replicas })
	w.now = func() time.Time { return now }
	w.pay("alice", 2000)
	if d := w.wait("alice"); d != 0 {
		t.Fatalf("within a third of the burst (2,000 of 6,000), alice waits %s", d)
	}
	w.pay("alice", 1000)
	// 1,000 bytes of debt, paid at a third of 3,000 a second.
	if d := w.wait("alice"); d != time.Second {
		t.Fatalf("1,000 bytes in debt at 1,000/s: wait %s, want 1s", d)
	}
	replicas = 1
	now = now.Add(5 * time.Second)
	w.pay("alice", 5500)
	if d := w.wait("alice"); d != 0 {
		t.Fatalf("alone again, alice's budget refills to the whole burst: she waits %s after 5,500 of 6,000", d)
	}
	replicas = 0 // no count yet: the replica keeps the whole budget
	if rate, burst := w.share(); rate != 3000 || burst != 6000 {
		t.Fatalf("with no replicas counted, the share is %v and %v", rate, burst)
	}
}

func TestBudgetKeyIsTheStudentsOrTheNamespaces(t *testing.T) {
	for _, tc := range []struct {
		user pipeline.User
		key  string
		ok   bool
	}{
		{pipeline.User{Name: "alice", Groups: []string{classroom.StudentGroup}}, "alice", true},
		{pipeline.User{Name: "system:serviceaccount:alice:builder"}, "alice", true},
		{pipeline.User{Name: "instructor", Groups: []string{classroom.InstructorGroup}}, "", false},
		{pipeline.User{Name: "system:admin", Groups: []string{pipeline.SystemPrivilegedGroup}}, "", false},
		{pipeline.Anonymous(), "", false},
	} {
		if key, ok := budgetKey(tc.user); key != tc.key || ok != tc.ok {
			t.Errorf("budgetKey(%s) = %q, %v; want %q, %v", tc.user.Name, key, ok, tc.key, tc.ok)
		}
	}
}

// Only an answer that is the object tells what the write stored: a
// request that accepts a Table or the metadata alone (kube's as=) may get
// one, whatever type the answer names, and an answer whose type names
// as= or cannot be read is not known to be the object either.
func TestAnswersWithObject(t *testing.T) {
	for _, tc := range []struct {
		accept      []string
		contentType string
		want        bool
	}{
		{nil, "application/json", true},
		{[]string{"application/json"}, "application/json", true},
		{[]string{"application/vnd.kubernetes.protobuf, application/json"}, "application/vnd.kubernetes.protobuf", true},
		{[]string{"*/*"}, "application/yaml; charset=utf-8", true},
		{[]string{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"}, "application/json", false},
		{[]string{"application/json", "application/json;AS=Table;g=meta.k8s.io;v=v1"}, "application/json", false},
		{[]string{"application/json;as=Table;g=meta.k8s.io;v=v1, application/json"}, "application/json", false},
		{[]string{"application/json"}, "application/json;as=Table;g=meta.k8s.io;v=v1", false},
		{[]string{"application/json"}, "", false},
		{[]string{"application/json"}, "application/json;;;=", false},
	} {
		if got := answersWithObject(tc.accept, tc.contentType); got != tc.want {
			t.Errorf("answersWithObject(%q, %q) = %v, want %v", tc.accept, tc.contentType, got, tc.want)
		}
	}
}

// A write is paid for only once it is stored: one the API refused (a
// conflict, here) costs nothing, though its body was read, and one that
// was stored costs its size.
func TestRefusedWritesCostNothing(t *testing.T) {
	w := newWriteBudgets(1000, 5000, func() int { return 1 })
	e := echo.New()
	e.HTTPErrorHandler = (&Server{log: slog.New(slog.DiscardHandler)}).handleError
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			alice := pipeline.User{Name: "alice", Groups: []string{classroom.StudentGroup}}
			c.SetRequest(r.WithContext(pipeline.WithRequest(r.Context(), nil, alice, alice)))
			return next(c)
		}
	})
	e.Use(limitWrites(w))
	e.Any("/api/*", func(c echo.Context) error {
		io.ReadAll(c.Request().Body)
		if c.QueryParam("conflict") != "" {
			return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "big", errors.New("the object has been modified"))
		}
		return c.JSONBlob(http.StatusOK, []byte(`{"kind":"ConfigMap"}`))
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	body := strings.Repeat("x", 4000)
	for range 3 {
		if resp, _ := webclient.Send(t, srv.Client(), "PUT", srv.URL+"/api/v1/namespaces/alice/configmaps/big?conflict=1", body); resp.StatusCode != http.StatusConflict {
			t.Fatalf("a conflicting write: %d", resp.StatusCode)
		}
	}
	if d := w.wait("alice"); d != 0 {
		t.Fatalf("after three refused writes of 4,000 bytes (a 5,000 budget), alice waits %s", d)
	}
	for range 2 {
		webclient.Send(t, srv.Client(), "PUT", srv.URL+"/api/v1/namespaces/alice/configmaps/big", body)
	}
	if d := w.wait("alice"); d == 0 {
		t.Fatal("after two stored writes of 4,000 bytes (a 5,000 budget), alice may write on")
	}
}
