// Package classroom is kubelab's classroom mode: students who sign in with a
// display name, each with a namespace of their own, an edit RoleBinding
// there and tokens for the browser and for kubectl.
package classroom

import "github.com/kubelab/kubelab/pipeline"

const (
	// StudentGroup is the group every student's identity carries; RBAC
	// bindings and the web UI recognise students by it.
	StudentGroup = "kubelab:students"
	// DemoNamespace is the lesson's own namespace, seeded with its demo
	// pods: the working namespace of everyone who is not a student.
	DemoNamespace = "internals-demo"
)

// NamespaceOf is the namespace a user works in: a student's own namespace,
// named as the student is (so RBAC messages read as the lesson's do:
// User "alice" cannot list ... in the namespace "bob"), or the lesson's
// demo namespace for the local user, instructors and admins.
func NamespaceOf(u pipeline.User) string {
	if u.InGroup(StudentGroup) {
		return u.Name
	}
	return DemoNamespace
}

// IsStudent reports whether u signed in as a student.
func IsStudent(u pipeline.User) bool { return u.InGroup(StudentGroup) }
