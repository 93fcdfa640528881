package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/pipeline"
)

// TestKubectlAsImpersonates: the admin's `kubectl --as` is served as that
// user, so RBAC refuses what the user may not do, with kube's message; a
// student may not impersonate anyone but their own service accounts.
func TestKubectlAsImpersonates(t *testing.T) {
	t.Parallel()
	lab := classroomLab(t)
	alice := join(t, lab, "Alice")
	kubectl := clitest.Kubectl(t)
	admin := lab.KubeconfigPath()

	out, stderr, err := clitest.Run(t, kubectl, "--kubeconfig", admin, "--as", "mallory", "get", "pods", "-n", "internals-demo")
	if err == nil || !strings.Contains(stderr, `pods is forbidden: User "mallory" cannot list resource "pods" in API group "" in the namespace "internals-demo"`) {
		t.Fatalf("admin as mallory: %v\n%s%s", err, out, stderr)
	}
	// The denial shows in the tracer of whoever sent it, naming both users.
	out, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", admin, "get", "--raw", "/kubelab/v1/traces")
	if err != nil {
		t.Fatalf("traces: %v %s", err, stderr)
	}
	var traces struct {
		Items []pipeline.Trace `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &traces); err != nil {
		t.Fatalf("traces: %v\n%s", err, out)
	}
	found := false
	for _, tr := range traces.Items {
		if tr.As == "mallory" && tr.Code == 403 && tr.Resource == "pods" {
			last := tr.Records[len(tr.Records)-1]
			found = last.Stage == pipeline.StageAuthorization && last.Decision == pipeline.Deny
		}
	}
	if !found {
		t.Fatalf("no trace of the admin's request as mallory ending at authorization: %s", out)
	}
	out, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", admin, "--as", "mallory", "--as-group", "system:masters", "get", "pods", "-n", "internals-demo", "-o", "name")
	if err != nil || !strings.Contains(out, "pod/") {
		t.Fatalf("admin as mallory in system:masters: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", admin, "--as", "alice", "--as-group", "k8s-students", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if err != nil || out != `alice ["k8s-students","system:authenticated"]` {
		t.Fatalf("whoami as alice: %v %q %s", err, out, stderr)
	}
	// An access review asks about the impersonated user.
	out, _, _ = clitest.Run(t, kubectl, "--kubeconfig", admin, "--as", "alice", "auth", "can-i", "list", "pods", "-n", "alice")
	if strings.TrimSpace(out) != "yes" {
		t.Fatalf("can alice list pods in her namespace: %q", out)
	}
	out, _, _ = clitest.Run(t, kubectl, "--kubeconfig", admin, "--as", "alice", "auth", "can-i", "list", "pods", "-n", "internals-demo")
	if strings.TrimSpace(out) != "no" {
		t.Fatalf("can alice list pods in internals-demo: %q", out)
	}
	// Alice is allowed no impersonation of users.
	out, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", alice.kubeconfig, "--as", "bob", "get", "pods")
	if err == nil || !strings.Contains(stderr, `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`) {
		t.Fatalf("alice as bob: %v\n%s%s", err, out, stderr)
	}
	// ...but may act as a service account of her namespace (edit allows
	// it), which may do nothing.
	out, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", alice.kubeconfig, "--as", "system:serviceaccount:alice:default", "get", "pods")
	if err == nil || !strings.Contains(stderr, `User "system:serviceaccount:alice:default" cannot list resource "pods"`) {
		t.Fatalf("alice as her default service account: %v\n%s%s", err, out, stderr)
	}
	// A group without a user is a bad request.
	out, stderr, err = clitest.Run(t, kubectl, "--kubeconfig", admin, "--as-group", "system:masters", "get", "pods")
	if err == nil || !strings.Contains(stderr, "without impersonating a user") {
		t.Fatalf("a group alone: %v\n%s%s", err, out, stderr)
	}
}
