package kubelet_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/kubelab/kubelab/controller/kubelet"
	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/clitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
)

// TestMain fails the package's tests if any leaves a goroutine running:
// the node's, its registry's or its etcd's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// asAdmin acts as the lab's admin, cluster-admin through system:masters,
// as a user's kubectl with the admin kubeconfig does.
var asAdmin = registry.WithUser(context.Background(), pipeline.User{Name: "kubelab-admin", Groups: []string{pipeline.SystemPrivilegedGroup}})

// lab is a simulated node running alone over a registry of the built-in
// kinds, and what a test reads it by.
type lab struct {
	pods, nodes, leases *registry.Store
	traces              *registrytest.Traces
	// kubeconfig, when the registry is served over HTTP, points kubectl
	// at it.
	kubeconfig string
}

// startNode runs the simulated node over a registry of its own.
func startNode(t *testing.T, startDelay time.Duration) *lab {
	t.Helper()
	return runNode(t, registrytest.Start(t), startDelay)
}

// runNode builds the node exactly as the server does (the same stores,
// the same identity in its context) and runs it until the test ends. The
// registry's pipeline only traces: it makes every call name its user, as
// the server's does, and tells the test who wrote what.
func runNode(t *testing.T, reg *registry.Registry, startDelay time.Duration) *lab {
	t.Helper()
	l := &lab{
		pods: registrytest.Core(t, reg, "pods"), nodes: registrytest.Core(t, reg, "nodes"),
		leases: registrytest.Store(t, reg, coordinationv1.SchemeGroupVersion.WithResource("leases")),
		traces: registrytest.Traced(reg),
	}
	node := kubelet.New(kubelet.Config{Cluster: kubelet.OnRegistry(l.nodes, l.pods, l.leases), StartDelay: startDelay,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	// The node's loop, queue, informer, heartbeats and delayed starts.
	registrytest.Run(t, registry.Node(kubelet.NodeName), node.Run, "github.com/kubelab/kubelab/controller",
		"github.com/kubelab/kubelab/controller/kubelet", "github.com/kubelab/kubelab/pipeline/informer", "k8s.io/client-go/util/workqueue")
	return l
}

// startAPI runs the node over a registry served by kubelab's Kubernetes
// API over HTTP (no server around it), for the real kubectl. The lesson's
// demo objects are left out: the node is the test's only subject.
func startAPI(t *testing.T) *lab {
	t.Helper()
	api := apitest.Start(t, func(c *apitest.Config) { c.NoDemo = true })
	l := runNode(t, api.API().Registry(), 0)
	l.kubeconfig = api.KubeconfigPath()
	return l
}

// kubectl runs the real kubectl against the lab's API.
func (l *lab) kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return clitest.Run(t, clitest.Kubectl(t), append([]string{"--kubeconfig", l.kubeconfig}, args...)...)
}

// wrote waits for the node to have made a successful verb on path, as
// the node. A trace is published once its call returns, which may be
// after a watch saw the write.
func wrote(t *testing.T, tr *registrytest.Traces, what, verb, path string) {
	t.Helper()
	node := registry.Node(kubelet.NodeName).Name
	eventually.Holds(t, what+" by "+node, func() (bool, error) {
		seen := []string{}
		for _, got := range tr.All() {
			if got.User == node && got.Verb == verb && got.Path == path && got.Code < http.StatusBadRequest {
				return true, nil
			}
			seen = append(seen, fmt.Sprintf("%s %s %s (%d)", got.User, got.Verb, got.Path, got.Code))
		}
		return false, fmt.Errorf("no successful %s of %s; the traces:\n%s", verb, path, strings.Join(seen, "\n"))
	})
}
