// Package classroom is kubelab's classroom mode: students who sign in with a
// display name, each with a namespace of their own, an edit RoleBinding
// there and tokens for the browser and for kubectl.
package classroom

import "github.com/kubelab/kubelab/pipeline"

const (
	// StudentGroup is the group every student's identity carries; RBAC
	// bindings and the web UI recognise students by it.
	StudentGroup = "kubelab:students"
	// InstructorGroup is the group of instructors: they see the whole
	// class's progress and results.
	InstructorGroup = "kubelab:instructors"
	// GraderGroup is the group of graders (an LMS bridge, an autograder):
	// they read quiz results and grade submissions.
	GraderGroup = "kubelab:graders"
	// ClassGroupPrefix marks the group that names a student's class: a
	// student in "kubelab:class:k8s-101" is in class "k8s-101", which is
	// what graders filter results by.
	ClassGroupPrefix = "kubelab:class:"
	// DemoNamespace is the lesson's own namespace, seeded with its demo
	// pods: the working namespace of everyone who is not a student.
	DemoNamespace = "internals-demo"
	// StudentLabel marks a namespace kubelab made for the student it
	// names. Only kubelab and cluster admins may create or relabel
	// namespaces in a class, so a student cannot forge it.
	StudentLabel = "kubelab.io/student"
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

// IsInstructor reports whether u runs the class: instructors and cluster
// admins (system:masters), never students.
func IsInstructor(u pipeline.User) bool {
	return !IsStudent(u) && (u.InGroup(InstructorGroup) || u.InGroup(pipeline.SystemPrivilegedGroup))
}

// CanGrade reports whether u may read the class's results: instructors,
// graders and cluster admins (system:masters), never students.
func CanGrade(u pipeline.User) bool {
	if IsStudent(u) {
		return false
	}
	return u.InGroup(InstructorGroup) || u.InGroup(GraderGroup) || u.InGroup(pipeline.SystemPrivilegedGroup)
}
