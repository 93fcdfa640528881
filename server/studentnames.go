package server

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// staticUserNames are the users kubelab's own tokens and requests act as;
// no student may be called as one of them.
var staticUserNames = []string{AdminUser.Name, InstructorUser.Name, GraderUser.Name}

// userNameTaken reports whether name is an identity that is not a new
// student's to take: a static user, a system: name, a resource's plural,
// or a User subject of any binding outside the student's own namespace (a
// TA the instructor gave rights somewhere). The namespace named name is left out because
// claimStudentNamespace decides it: a binding in it is either kubelab's own
// from an earlier attempt for this student, or in a namespace that is not
// the student's, which is refused there.
//
// It lists the bindings from etcd rather than the authorizer's cache, so a
// binding written just before the check is seen. The race left: a binding
// for User name created after this check but before the student signs in
// applies to the student; only an admin can write one, and doing so after
// the student has the name is the same as binding the student.
func (s *Server) userNameTaken(ctx context.Context, name string) (bool, error) {
	if strings.HasPrefix(name, "system:") {
		return true, nil
	}
	for _, static := range staticUserNames {
		if name == static {
			return true, nil
		}
	}
	// A resource's plural is a segment of etcd's keys
	// (/registry/<group>/<plural>/<name>) where a namespace's name would
	// stand in a namespaced key: the inspector tells them apart by the
	// API's resources, and no student is called as one either.
	for _, r := range s.api.Registry().All() {
		if r.Name == name {
			return true, nil
		}
	}
	for _, resource := range []string{"rolebindings", "clusterrolebindings"} {
		store, ok := s.api.Store(rbacv1.SchemeGroupVersion.WithResource(resource))
		if !ok {
			return false, fmt.Errorf("%s are not served", resource)
		}
		list, err := store.List(ctx, storage.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing %s: %w", resource, err)
		}
		for _, obj := range list.Items {
			var namespace string
			var subjects []rbacv1.Subject
			switch b := obj.(type) {
			case *rbacv1.RoleBinding:
				namespace, subjects = b.Namespace, b.Subjects
			case *rbacv1.ClusterRoleBinding:
				subjects = b.Subjects
			}
			if namespace == name {
				continue
			}
			for _, sub := range subjects {
				if sub.Kind == rbacv1.UserKind && sub.Name == name {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// claimStudentNamespace creates the namespace of a new student. A
// namespace that already exists is never adopted, whoever made it, unless
// it carries classroom.StudentLabel naming this student: then it is what an
// earlier, failed attempt to provision this same name made (the student's
// key was given back, so no student holds the name), and provisioning goes
// on in it. Only kubelab and cluster admins can create or label namespaces
// in a class, so a student cannot plant such a namespace for another name.
// The other choice, deleting the namespace on failure, would not free the
// name at once: a namespace is deleted in the background, and a retry
// would find it Terminating.
func (s *Server) claimStudentNamespace(ctx context.Context, name string) error {
	namespaces, ok := s.api.Registry().Store(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return fmt.Errorf("namespaces are not served")
	}
	ctx = registry.WithUser(ctx, provisioner)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{classroom.StudentLabel: name}}}
	switch _, err := namespaces.Create(ctx, ns, registry.CreateOptions{FieldManager: kubeapi.SeedFieldManager}); {
	case err == nil:
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	obj, err := namespaces.Get(ctx, storage.Key{Name: name}, "")
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	if obj.(*corev1.Namespace).Labels[classroom.StudentLabel] != name {
		return fmt.Errorf("%w: namespace %s exists", classroom.ErrNameTaken, name)
	}
	// A removed student's namespace, still emptying: the name's new
	// student starts afresh under the next name, not in what is going.
	if obj.(*corev1.Namespace).DeletionTimestamp != nil {
		return fmt.Errorf("%w: namespace %s is being deleted", classroom.ErrNameTaken, name)
	}
	return nil
}

// studentSeeds are the rest of a new student's world, once their
// namespace is claimed: the lesson's demo objects and the RoleBinding that
// gives the student edit in their namespace.
func studentSeeds(name string) []registry.Seed {
	var out []registry.Seed
	for _, sd := range kubeapi.DemoSeeds(name, nil) {
		// The namespace is claimStudentNamespace's: Make would take an
		// existing one for its own.
		if sd.Resource.Resource == "namespaces" {
			continue
		}
		out = append(out, sd)
	}
	return append(out, registry.Seed{
		Resource: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Namespace: name, FieldManager: kubeapi.SeedFieldManager,
		Manifest: fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":%q},`+
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},`+
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":%q}]}`, studentBinding, name),
	})
}
