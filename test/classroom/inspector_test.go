package classroom_test

import (
	"github.com/kubelab/kubelab/internal/clitest"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examKeys is a cluster-scoped custom resource an instructor keeps the
// answers in: only admins may read it through the API.
const examKeys = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: examkeys.course.example
spec:
  group: course.example
  scope: Cluster
  names: {plural: examkeys, singular: examkey, kind: ExamKey}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

const finalExam = `apiVersion: course.example/v1
kind: ExamKey
metadata: {name: final-exam}
answers: {q1: b, q2: d}
`

// Finding: the etcd inspector let a student read the keys whose second
// segment was their namespace's name. A cluster-scoped custom resource's
// keys (/registry/<group>/<plural>/<name>) have that shape, so a student
// who signed in as "examkeys" read the exam's answers, which the API
// refuses them, and one called "apiservices" every APIService. Now the
// readable keys are those of the API's namespaced resources in the
// student's namespace, and a resource's plural is never a student's name.
func TestInspectorReadsOnlyTheStudentsNamespacedObjects(t *testing.T) {
	t.Parallel()
	c := startClass(t)
	admin := c.adminKubeconfig()
	// The student signs in before the resource exists: the name was free.
	examkeys := join(t, c.URL(), "examkeys")
	if examkeys.name != "examkeys" {
		t.Fatalf("the first examkeys was named %q", examkeys.name)
	}
	dir := t.TempDir()
	for name, doc := range map[string]string{"crd.yaml": examKeys, "key.yaml": finalExam} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clitest.KubectlWithOK(t, admin, "apply", "-f", filepath.Join(dir, "crd.yaml"))
	clitest.KubectlWithOK(t, admin, "wait", "--for=condition=Established", "crd/examkeys.course.example", "--timeout=60s")
	clitest.KubectlWithOK(t, admin, "apply", "-f", filepath.Join(dir, "key.yaml"))
	if _, stderr, err := examkeys.kubectl(t, "get", "examkeys", "final-exam"); err == nil || !strings.Contains(strings.ToLower(stderr), "forbidden") {
		t.Fatalf("the API let examkeys read the exam key: %v %s", err, stderr)
	}

	value := func(s *student, key string) (int, string) {
		t.Helper()
		resp, body := s.do(t, "GET", "/ui/etcd/value?key="+url.QueryEscape(key), "")
		return resp.StatusCode, body
	}
	for _, key := range []string{
		"/registry/course.example/examkeys/final-exam",
		"/registry/apiregistration.k8s.io/apiservices/v1.apps",
	} {
		if code, body := value(examkeys, key); code != http.StatusForbidden {
			t.Errorf("examkeys read %s through the inspector: %d %.300s", key, code, body)
		}
	}
	if resp, body := examkeys.do(t, "GET", "/ui/etcd/keys?prefix="+url.QueryEscape("/registry/course.example/"), ""); resp.StatusCode != http.StatusOK || strings.Contains(body, "final-exam") {
		t.Errorf("examkeys listed the exam key's prefix: %d %.300s", resp.StatusCode, body)
	}
	// What is theirs, they read, built-in and custom alike.
	for _, key := range []string{
		"/registry/pods/examkeys/ssa-demo",
		"/registry/configmaps/examkeys/kube-root-ca.crt",
	} {
		if code, body := value(examkeys, key); code != http.StatusOK {
			t.Errorf("examkeys could not read their own %s: %d %.300s", key, code, body)
		}
	}

	// A resource's plural is no longer a student's name.
	for _, plural := range []string{"apiservices", "examkeys", "pods"} {
		if s := signIn(t, nil, c.URL(), plural); s.name == plural {
			t.Errorf("a student signed in as %q was given the name %q", plural, s.name)
		}
	}
}
