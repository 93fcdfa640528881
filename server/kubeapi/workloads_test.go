package kubeapi_test

import (
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/clitest"
)

// TestWorkloadKindsWithKubectl: the everyday workload commands work, with
// kube's defaults and selector validation (there are no controllers: a
// Deployment makes no pods here).
func TestWorkloadKindsWithKubectl(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	kubectl := clitest.Kubectl(t)
	run := func(args ...string) (string, string, error) {
		return clitest.Run(t, kubectl, append([]string{"--kubeconfig", lab.KubeconfigPath(), "-n", "internals-demo"}, args...)...)
	}
	for _, args := range [][]string{
		{"create", "deployment", "web", "--image=nginx:1.27", "--replicas=3"},
		{"expose", "deployment", "web", "--port=80", "--target-port=8080"},
		{"create", "-f", "-"},
	} {
		if args[0] == "create" && args[1] == "-f" {
			out, stderr, err := clitest.RunWith(t, clitest.Options{Stdin: `apiVersion: v1
kind: ReplicationController
metadata: {name: rc1}
spec:
  template:
    metadata: {labels: {app: rc1}}
    spec: {containers: [{name: c, image: busybox}]}
`}, kubectl, "--kubeconfig", lab.KubeconfigPath(), "-n", "internals-demo", "create", "-f", "-")
			if err != nil {
				t.Fatalf("create rc: %v %s%s", err, out, stderr)
			}
			continue
		}
		if out, stderr, err := run(args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, stderr)
		}
	}
	out, _, err := run("get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.spec.strategy.type} {.spec.revisionHistoryLimit} {.spec.template.spec.restartPolicy}")
	if err != nil || out != "3 RollingUpdate 10 Always" {
		t.Fatalf("deployment defaults: %q %v", out, err)
	}
	out, _, err = run("get", "service", "web", "-o", "jsonpath={.spec.type} {.spec.clusterIP} {.spec.ports[0].port}/{.spec.ports[0].protocol}->{.spec.ports[0].targetPort} {.spec.selector.app}")
	if err != nil || !strings.HasPrefix(out, "ClusterIP 10.") || !strings.HasSuffix(out, " 80/TCP->8080 web") {
		t.Fatalf("service: %q %v", out, err)
	}
	out, _, err = run("get", "rc", "rc1", "-o", "jsonpath={.spec.replicas} {.spec.selector.app}")
	if err != nil || out != "1 rc1" {
		t.Fatalf("replication controller defaults: %q %v", out, err)
	}
	out, stderr, err := run("get", "all", "-o", "name")
	for _, want := range []string{"deployment.apps/web", "service/web", "replicationcontroller/rc1", "pod/ssa-demo"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("kubectl get all lacks %s: %v\n%s%s", want, err, out, stderr)
		}
	}

	// A selector that does not match the template: 422 with the field.
	_, stderr, err = clitest.RunWith(t, clitest.Options{Stdin: `apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  selector: {matchLabels: {app: one}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: c, image: busybox}]}
`}, kubectl, "--kubeconfig", lab.KubeconfigPath(), "-n", "internals-demo", "create", "-f", "-")
	if err == nil || !strings.Contains(stderr, "spec.template.metadata.labels: Invalid value") || !strings.Contains(stderr, "`selector` does not match template `labels`") {
		t.Fatalf("mismatched selector: %v %s", err, stderr)
	}
}
