package quizhttp

import (
	"context"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// The quiz's ClusterRoles. The front door authorizes the quiz's paths as
// non-resource URLs with RBAC, so these are ordinary RBAC objects: an
// instructor can read them (kubectl describe clusterrole kubelab:quiz-grader)
// and `kubectl auth can-i get /kubelab/v1/grader/results` answers truly.
const (
	// TakerRole lets every signed-in user take the quizzes.
	TakerRole = "kubelab:quiz-taker"
	// GraderRole lets instructors and graders read results and grade.
	GraderRole = "kubelab:quiz-grader"
)

func quizRoles() ([]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	verbs := []string{"get", "post"}
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: TakerRole}, Rules: []rbacv1.PolicyRule{
			{Verbs: verbs, NonResourceURLs: []string{"/quiz", "/quiz/*", QuizzesPath, QuizzesPath + "/*"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: GraderRole}, Rules: []rbacv1.PolicyRule{
			{Verbs: verbs, NonResourceURLs: []string{GraderPath + "/*"}},
		}},
	}
	group := func(g string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g}
	}
	bindings := []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: TakerRole},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TakerRole},
			Subjects: []rbacv1.Subject{group(pipeline.AllAuthenticated)}},
		{ObjectMeta: metav1.ObjectMeta{Name: GraderRole},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: GraderRole},
			Subjects: []rbacv1.Subject{group(classroom.InstructorGroup), group(classroom.GraderGroup)}},
	}
	return roles, bindings
}

// ensureRBAC creates the quiz's roles and bindings if they are missing,
// and leaves them alone if an instructor has changed them.
func ensureRBAC(ctx context.Context, api *kubeapi.API) error {
	roleStore, _ := api.Store(rbacv1.SchemeGroupVersion.WithResource("clusterroles"))
	bindingStore, _ := api.Store(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))
	roles, bindings := quizRoles()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	create := func(st interface {
		Create(context.Context, storage.Key, runtime.Object) (runtime.Object, error)
	}, meta *metav1.ObjectMeta, obj runtime.Object) error {
		meta.UID, meta.CreationTimestamp = uuid.NewUUID(), now
		meta.Annotations = map[string]string{"kubelab.io/why": "the quiz's pages, quiz API and grader endpoint are non-resource URLs, authorized by RBAC like any other"}
		if _, err := st.Create(ctx, storage.Key{Name: meta.Name}, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	for _, r := range roles {
		if err := create(roleStore, &r.ObjectMeta, r); err != nil {
			return err
		}
	}
	for _, b := range bindings {
		if err := create(bindingStore, &b.ObjectMeta, b); err != nil {
			return err
		}
	}
	return nil
}
