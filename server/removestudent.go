package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubelab/kubelab/classroom"
	labstore "github.com/kubelab/kubelab/labs/etcdstore"
	"github.com/kubelab/kubelab/pipeline"
	quizstore "github.com/kubelab/kubelab/quiz/etcdstore"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/storage"
)

// StudentsPath is where an instructor removes a student from the class:
// DELETE StudentsPath/<user name>.
const StudentsPath = "/kubelab/v1/students"

// removeStudent takes the student called name out of the class, as u
// (instructors and admins only): a throwaway or a stranger's account held
// its seat for good. Their tokens go first, so that nothing of theirs
// works while the rest goes; then their namespace (the namespace
// controller empties it); then, in one transaction, their record (which
// gives the seat back), their quiz attempts and their lab progress, so
// that neither the room nor the grader goes on showing them, and a name
// given back starts afresh. Each step may be done again, so a removal
// that fails part-way is finished by asking again.
func (s *Server) removeStudent(ctx context.Context, u pipeline.User, name string) (classroom.Student, error) {
	if u.IsAnonymous() {
		return classroom.Student{}, pipeline.Unauthorized()
	}
	if !classroom.IsInstructor(u) {
		return classroom.Student{}, apierrors.NewForbidden(schemaless("students"), name, errors.New("only the instructor removes a student"))
	}
	if s.class == nil {
		return classroom.Student{}, apierrors.NewNotFound(schemaless("students"), name)
	}
	st, ok, err := s.class.Get(ctx, name)
	if err != nil {
		return classroom.Student{}, err
	}
	if !ok {
		return classroom.Student{}, apierrors.NewNotFound(schemaless("students"), name)
	}
	if err := s.authn.RevokeUser(ctx, st.Name, classroom.StudentGroup); err != nil {
		return classroom.Student{}, err
	}
	namespaces, ok := s.api.Registry().Store(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return classroom.Student{}, fmt.Errorf("namespaces are not served")
	}
	ns := classroom.NamespaceOf(st.User())
	if _, _, err := namespaces.Delete(registry.WithUser(ctx, provisioner), storage.Key{Name: ns}, registry.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return classroom.Student{}, fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	user := url.PathEscape(st.Name)
	if _, err := s.class.Remove(ctx, st.Name,
		clientv3.OpDelete(quizstore.Prefix+user+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(quizstore.LedgerPrefix+user+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(labstore.Prefix+user)); err != nil {
		return classroom.Student{}, err
	}
	s.log.InfoContext(ctx, "student removed", "student", st.Name, "displayName", st.DisplayName, "by", u.Name)
	return st, nil
}

// apiRemoveStudent is DELETE /kubelab/v1/students/<name>: the removed
// student in, as kube answers a delete with the object deleted.
func (s *Server) apiRemoveStudent(c echo.Context) error {
	st, err := s.removeStudent(c.Request().Context(), requestUser(c), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// removeFromRoom is removeStudent for the room's button, which shows the
// room again rather than the student.
func (s *Server) removeFromRoom(ctx context.Context, u pipeline.User, name string) error {
	_, err := s.removeStudent(ctx, u, name)
	return err
}
