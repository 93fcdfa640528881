package frontdoor_test

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/pipeline"
)

// TestPipelineEnforcesRBACAndTracesEveryStage: a user with a token is
// authorized by RBAC over the objects in etcd (a binding created through
// the API takes effect), a bad token is 401, and each request leaves a
// trace of the lesson's stages.
func TestPipelineEnforcesRBACAndTracesEveryStage(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t, func(c *apitest.Config) { c.Pipeline = true })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	token, err := lab.FrontDoor().Authn.Mint(ctx, pipeline.User{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	alice := kubernetes.NewForConfigOrDie(&rest.Config{Host: lab.URL(), BearerToken: token})
	admin := kubernetes.NewForConfigOrDie(&rest.Config{Host: lab.URL()}) // local mode: anonymous is cluster-admin

	_, err = alice.CoreV1().Pods("internals-demo").List(ctx, metav1.ListOptions{})
	want := `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "internals-demo"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("before any binding: %v\nwant %s", err, want)
	}
	canList := func() bool {
		t.Helper()
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "internals-demo", Verb: "list", Resource: "pods"}}}
		got, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Allowed
	}
	if canList() {
		t.Fatal("can-i says yes before any binding")
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	if _, err := admin.RbacV1().RoleBindings("internals-demo").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err = alice.CoreV1().Pods("internals-demo").List(ctx, metav1.ListOptions{})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the binding never took effect: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !canList() {
		t.Fatal("can-i says no where alice is allowed")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "alices"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	created, err := alice.CoreV1().Pods("internals-demo").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.ServiceAccountName != "default" {
		t.Errorf("ServiceAccount admission did not run: %q", created.Spec.ServiceAccountName)
	}
	if _, err := alice.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice created in another namespace: %v", err)
	}
	bad := kubernetes.NewForConfigOrDie(&rest.Config{Host: lab.URL(), BearerToken: "not-a-token"})
	if _, err := bad.CoreV1().Pods("internals-demo").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("bad token: %v", err)
	}

	// The create's trace names every stage, in the lesson's order.
	var trace *pipeline.Trace
	for _, tr := range lab.FrontDoor().Traces.Recent("alice", 20) {
		if tr.Verb == "create" && tr.Name == "" && tr.Namespace == "internals-demo" && tr.Code == 201 {
			trace = &tr
		}
	}
	if trace == nil {
		t.Fatalf("no trace of alice's create: %+v", lab.FrontDoor().Traces.Recent("alice", 20))
	}
	var stages []string
	for _, r := range trace.Records {
		stages = append(stages, string(r.Stage)+"/"+r.Plugin+"/"+string(r.Decision))
	}
	want = "[authentication//allow authorization/RBAC/allow mutating-admission/NamespaceLifecycle/allow mutating-admission/ServiceAccount/mutate mutating-admission/DefaultTolerationSeconds/mutate validation//allow validating-admission/RequireLimits/allow validating-admission/ResourceQuota/allow storage/etcd/allow]"
	if got := fmtSlice(stages); got != want {
		t.Fatalf("stages %s\nwant   %s", got, want)
	}
	last := trace.Records[len(trace.Records)-1]
	if last.ResourceVersion != created.ResourceVersion {
		t.Errorf("storage record at rv %q, created at %q", last.ResourceVersion, created.ResourceVersion)
	}
	if sa := trace.Records[3]; len(sa.Patch) == 0 {
		t.Errorf("ServiceAccount mutation without a patch: %+v", sa)
	}
}

func fmtSlice(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
